/// @file race_detector.cpp
/// @brief The shared-memory race detector: every access checked against the shadow of its words.
#include <sstream>
#include <string>
#include <vector>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"
#include "unwritten_reads.h"

namespace emu {

thread_local EMU_FAST_TLS std::vector<ShadowWord> tls_shadow;

namespace {

/// "warp 1 lane 0 (thread (32,0,0))", and in a cluster the block too: the one thread an access
/// was made by, so both parties of a race can be found in the kernel.
std::string party_text(const AccessTag& a, const UnitState& u) {
    const int rank = a.warp / 32, warp = a.warp % 32;
    const BlockState& b = u.blocks[rank];
    const std::size_t linear = static_cast<std::size_t>(warp) * 32 + static_cast<std::size_t>(a.lane);
    std::string s = "warp " + std::to_string(warp) + " lane " + std::to_string(a.lane);
    if (linear < b.threads.size()) s += " (thread " + dim_text(b.threads[linear]->idx);
    else s += " (thread ?";
    if (u.blocks.size() > 1) s += " of block " + dim_text(b.idx) + ", cluster block " + std::to_string(rank);
    return s + ")";
}

[[noreturn]] void report_race(const UnitState& u, std::size_t word, int rank, const char* first_kind,
                              const AccessTag& first, const char* second_kind, const AccessTag& second) {
    std::ostringstream o;
    const bool across = first.warp / 32 != second.warp / 32;
    o << "shared-memory race on the 4-byte word at offset " << (word * 4) % u.arena_stride << " of block "
      << dim_text(u.blocks[rank].idx) << "'s shared memory: " << party_text(first, u) << " " << first_kind << " it"
      << at_line(first.pc) << ", then " << party_text(second, u) << " " << second_kind << " it" << at_line(second.pc)
      << (across ? " with no cluster barrier (cluster.sync(), or barrier_arrive then barrier_wait) between them"
                 : " with no __syncthreads() between them");
    raise_fault(cudaErrorEmulatorSharedMemoryRace, o.str());
}

/// True when `prev` happens before an access by thread `t` now: the same warp (its lanes meet at
/// its warp operations), a __syncthreads() of the same block since, or a cluster barrier phase
/// that `t` has waited for and that `prev`'s thread had arrived at only after the access.
inline bool ordered(const AccessTag& prev, const ThreadState& t, int gwarp, uint64_t block_epoch) {
    if (prev.warp == gwarp) return true;
    if (prev.warp / 32 == t.rank && prev.epoch != block_epoch) return true;
    return t.cluster_view >= prev.release;
}

}  // namespace

void shared_access(UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc) {
    ThreadState& t = *tls_thread;
    const int gwarp = t.rank * 32 + t.warp;
    const std::size_t first = offset / 4, last = (offset + bytes - 1) / 4;
    const int rank = static_cast<int>(offset / u.arena_stride);
    if (rank != t.rank && u.blocks[rank].live == 0)
        raise_fault(cudaErrorIllegalAddress,
                    "illegal address: " + where_now() + (write ? " writes" : " reads") + " the shared memory of cluster "
                    "block " + std::to_string(rank) + ", which has already exited" + at_line(pc) +
                    " (a block's shared memory is gone when it exits: a cluster barrier must keep it alive until "
                    "its peers are done with it)");
    const uint64_t epoch = u.blocks[t.rank].epoch;
    // Other blocks see this access ordered once a phase completes that this thread arrives at
    // after it: the open phase, or the one after when it has arrived at the open one already.
    const uint64_t release = u.cluster_phase + ((t.arrived && t.arrival_done == 0) ? 2 : 1);
    const AccessTag now{epoch, release, pc, gwarp, t.lane};
    for (std::size_t w = first; w <= last; ++w) {
        ShadowWord& s = tls_shadow[w];
        const uint8_t bytes_here = byte_mask(w, offset, bytes);
        if (write) {
            s.written |= bytes_here;
            if (!ordered(s.write, t, gwarp, epoch)) report_race(u, w, rank, "wrote", s.write, "wrote", now);
            if (!ordered(s.read, t, gwarp, epoch)) report_race(u, w, rank, "read", s.read, "wrote", now);
            if (s.read_multi && s.read.warp != -1 && !(s.read.warp / 32 == t.rank && s.read.epoch != epoch) &&
                t.cluster_view < s.read.release)
                // Several warps read it since the last barrier: name one that is not this one
                // (`read` may be this warp's own read, which comes before its write).
                report_race(u, w, rank, "read",
                            s.read.warp != gwarp ? s.read
                                                 : AccessTag{0, 0, s.other_read.pc, s.other_read.warp, s.other_read.lane},
                            "wrote", now);
            s.write = now;
        } else {
            if ((s.written & bytes_here) != bytes_here)
                note_unwritten_read(u, w * 4 + static_cast<unsigned>(__builtin_ctz(bytes_here & ~s.written)), pc);
            if (!ordered(s.write, t, gwarp, epoch)) report_race(u, w, rank, "wrote", s.write, "read", now);
            // Reads made together with the last one (read_multi) are ordered before this read
            // when the last one would be, whichever warp makes this one: then they are history.
            // (A stale flag kept when the same warp reads again would make its next write look
            // like a race with reads of an earlier epoch, or of an earlier kernel.)
            const bool last_read_ordered = s.read.warp == -1 || (s.read.warp / 32 == t.rank && s.read.epoch != epoch) ||
                                           t.cluster_view >= s.read.release;
            if (last_read_ordered) {
                s.read_multi = false;
                s.read = now;
            } else if (s.read.warp == gwarp) {
                s.read = now;
            } else {
                s.read_multi = true;
                s.other_read = AccessName{pc, gwarp, t.lane};
            }
        }
    }
}

void shared_unordered_access(uintptr_t offset, std::size_t bytes, bool write) {
    if (!write || bytes == 0) return;  // a read here may be a spin on a flag not yet set: never reported
    for (std::size_t w = offset / 4; w <= (offset + bytes - 1) / 4; ++w) tls_shadow[w].written |= byte_mask(w, offset, bytes);
}

}  // namespace emu
