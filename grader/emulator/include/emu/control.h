/// @file control.h
/// @brief Settings of the emulator that a grader (not a kernel) makes, and what it asks after a launch.
#pragma once

#include <cstddef>
#include <string>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace emu {

/// A launch using more than this many seconds of CPU time on every core is stopped and reported as a
/// hang (cudaErrorLaunchTimeout). CPU time, not wall time: other work on the machine slows a kernel
/// down without making it a hang.
void set_watchdog_seconds(double seconds);

/// The first read of shared memory that no thread of its block had written, in the launches since
/// the last call ("read of shared memory never written: partials[5] at k.cu:40 by block (0,0,0)
/// warp 0 lane 5 ..."), or "" when there was none. The kernel goes on (the value read is the NaN
/// poison), so its outputs can still be checked; one such read is kept until this call takes it.
std::string take_unwritten_shared_read();

/// Seeds the scheduler: the order each launch takes its blocks in and the order ready warps run
/// in are drawn from this seed and a launch counter (reset here), so a grade run again with the
/// same seed schedules the same way, and two launches on the same inputs do not.
void set_schedule_seed(uint64_t seed);

/// Kernel reads of the device allocation at `allocation` outside its bytes [lo, hi) are illegal
/// addresses: the grader's guard zones around a tensor it checks for writes (docs/emulator.md,
/// "Guard zones"). Writes there stay allowed, so the grader's own check names what was written.
/// Every allocation starts with the whole of it readable.
void set_read_window(const void* allocation, std::size_t lo, std::size_t hi);

// ---- large calls on a sample of blocks (docs/emulator.md, "Sampled calls") ------------------

/// Opens a sampled call: until end_sampled_call, a submission's launch of more than a few blocks
/// runs a sample of them (the first, last and middle ones, a few drawn from `seed`, and those that
/// should write the target rows of the lazy ranges), and lazy ranges get their contents on first
/// touch. The same seed picks the same sample, so every launch of one call runs the same blocks.
void begin_sampled_call(uint64_t seed);
/// Closes it: the lazy ranges are forgotten (what they were given stays).
void end_sampled_call();

/// Writes the contents of bytes [offset, offset + bytes) of a lazy range, counted from its start, to `out`.
using LazyFill = std::function<void(std::size_t offset, std::size_t bytes, unsigned char* out)>;

/// The row of the grader's tensor that byte `offset` of a lazy range belongs to, or -1 (guards, padding).
using RowOf = std::function<int64_t(std::size_t offset)>;

/// A row the launches of a sampled call must write, as far as the sampled units' writes predict
/// which units write it: its index and its bytes [lo, hi) (offsets from the range's start).
struct TargetRow {
    int64_t row = 0;
    std::size_t lo = 0, hi = 0;
};

/// Declares the device allocation starting at `start` (`bytes` long) lazy for the open sampled
/// call: nothing is written now; each 64 KiB chunk gets `fill`'s contents when first touched (by a
/// kernel, a copy, a memset or materialize), so a tensor of gigabytes costs only what is touched.
/// `row_of` says which row a byte is in: the model of which unit writes which rows is in rows, so
/// a block of 16 heads of a [tokens, heads, dim] tensor is one step of 16 rows whatever the strides.
/// `targets`: the rows the grader checks for sure.
void add_lazy_range(void* start, std::size_t bytes, LazyFill fill, RowOf row_of, std::vector<TargetRow> targets);

/// Gives [p, p + bytes) its contents now where it lies in a lazy range not touched yet (before the
/// grader's own code, which the emulator does not watch, reads it).
void materialize(const void* p, std::size_t bytes);

/// The byte ranges (offsets from `start`, sorted, merged) of the lazy range at `start` that have
/// their contents so far: what the call touched (and what was materialized). Empty when `start` is
/// not a lazy range.
std::vector<std::pair<std::size_t, std::size_t>> touched_ranges(const void* start);

/// One sampled launch of the open call: its units (blocks, or clusters) and how many of them ran.
struct SampledLaunch {
    uint64_t units = 0, run = 0;
};
/// The sampled launches of the open call so far.
std::vector<SampledLaunch> sampled_launches();

// ---- the traffic report (docs/emulator.md, "Traffic") ---------------------------------------

/// What one recorded launch asked of the memory system: the sampled units' warp-level requests,
/// and a model of the DRAM traffic of the whole grid behind an H100's 50 MB L2.
struct TrafficLaunch {
    uint64_t units = 0, units_run = 0;  ///< the grid's units (blocks, or clusters) and how many were recorded
    uint64_t grid_blocks = 0;
    unsigned threads_per_block = 0, blocks_per_unit = 1;
    std::size_t shared_bytes_per_block = 0;  ///< static and dynamic
    /// DRAM bytes of the whole grid: each 32-byte sector once, plus sectors read again after the
    /// grid touched more than the L2 holds in between (scaled from the recorded units).
    double dram_read_bytes = 0, dram_write_bytes = 0;
    /// Global loads and stores of the recorded units, warp by warp: requests (one instruction of one
    /// warp), the distinct sectors each touched, and the lanes' bytes and accesses.
    double global_requests = 0, global_sectors = 0, global_lane_bytes = 0, global_lane_accesses = 0;
    /// Shared-memory requests and the wavefronts past one each needed (bank conflicts).
    double shared_requests = 0, shared_wavefronts = 0;
    /// Bytes of global loads a thread keeps in flight at once (an estimate: the loads it issues
    /// between two waits, up to 8; a longer run is a loop, counted as 4, as the GPU's compiler unrolls).
    double inflight_bytes_per_thread = 0;
};

/// Starts recording: until end_traffic, every launch of an open sampled call is recorded.
void begin_traffic();
/// Stops recording; the launches recorded, in order.
std::vector<TrafficLaunch> end_traffic();

}  // namespace emu
