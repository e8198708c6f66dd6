/// @file sampling.h
/// @brief Large calls on a sample of blocks (docs/emulator.md, "Sampled calls"): lazy device memory
///        given contents on first touch, and the choice of the units a sampled launch runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>


namespace emu {

/// What the units of one sampled launch wrote into the lazy ranges: per range, the lowest address
/// written and the bytes written (the emulator's view of which rows a unit owns).
struct UnitWrites {
    uint64_t unit = 0;
    std::vector<uintptr_t> lowest;
    std::vector<uint64_t> bytes;
};

/// The worker's record of the unit it runs in a sampled launch (null otherwise).
extern thread_local UnitWrites* tls_unit_writes;

/// True while the grader has a sampled call open.
bool sampling_open();
/// The open call's seed: every launch of one call samples the same units.
uint64_t sampling_seed();

/// An access of kernel code to a lazy allocation (memory.cpp calls it for every such access):
/// gives the touched chunks their contents first, and records a write for the sampling model.
void lazy_touch(uintptr_t address, std::size_t bytes, bool write);

/// Marks the allocation starting at `start` lazy or not (memory.cpp): a lazy allocation's accesses
/// always reach lazy_touch.
void set_allocation_lazy(const void* start, bool lazy);

/// Forgets the lazy range at `start`, if any (its allocation is being freed).
void forget_lazy_range(uintptr_t start);

/// The units a sampled launch of `units` units runs first: the first, last and middle ones and a
/// few drawn from `seed`; `required` is set to how many of them run whatever their cost (the rest
/// stop once the sample has written enough).
std::vector<uint64_t> first_sample(uint64_t units, uint64_t seed, std::size_t& required);

/// After the first sample: the units that should write the rows the grader checks for sure and
/// that no unit run so far wrote, as the units' writes predict them (`ran`: every unit run so far).
std::vector<uint64_t> units_for_missing_targets(uint64_t units, const std::vector<UnitWrites>& ran);

/// Bytes written into lazy ranges by the launch in progress (the sample's cost so far).
uint64_t sampled_bytes_written();
/// Starts counting a sampled launch: resets the targets' hits and the bytes written.
void begin_sampled_launch();
/// Records a finished sampled launch for the grader's description of the call.
void record_sampled_launch(uint64_t units, uint64_t run);

}  // namespace emu

