/// @file unwritten_reads.h
/// @brief Reads of shared memory that no thread of the block wrote: the shadow's written bytes and
///        the report (race_detector.cpp keeps the bytes, shared_memory.cpp names what was read).
#pragma once

#include <cstddef>
#include <cstdint>

#include "scheduler_state.h"

namespace emu {

/// The bits of a shadow word's `written` mask for the bytes of [offset, offset + bytes) in word `w`.
inline uint8_t byte_mask(std::size_t w, uintptr_t offset, std::size_t bytes) {
    const uintptr_t word_lo = w * 4, lo = offset > word_lo ? offset : word_lo;
    const uintptr_t end = offset + bytes, hi = end < word_lo + 4 ? end : word_lo + 4;
    return static_cast<uint8_t>(((1u << (hi - word_lo)) - 1) & ~((1u << (lo - word_lo)) - 1));
}

/// An atomic or volatile access to the running unit's shared memory (the race detector leaves
/// them alone): a write still counts as writing its bytes.
void shared_unordered_access(uintptr_t offset, std::size_t bytes, bool write);

/// The running thread read byte `offset` of the unit's arena before any thread wrote it: recorded
/// as the launch's report unless one is waiting already (emu::take_unwritten_shared_read).
void note_unwritten_read(const UnitState& u, uintptr_t offset, const void* pc);

}  // namespace emu
