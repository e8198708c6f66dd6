/// @file scheduler_state.h
/// @brief The scheduler's records of launches, clusters, blocks, warps and threads.
#pragma once

#include <boost/context/fiber.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "internal.h"
#include "sampling.h"
#include "scheduler_order.h"

namespace emu {

/// One launch while it runs: its spec, the static-shared layout, the first fault.
struct LaunchState {
    LaunchSpec spec;
    const std::function<void()>* body = nullptr;
    std::size_t dynamic_bytes = 0;
    std::mutex mu;
    std::map<const void*, std::size_t> slots;  ///< static __shared__ declaration -> arena offset
    /// Where the static slots begin: past the dynamic bytes and a guard (static_shared_start) in
    /// which every access faults, as one past the end of a block's shared memory does on a GPU.
    std::size_t static_start = 0;
    std::size_t static_end = 0;
    std::atomic<uint64_t> next_unit{0};
    UnitOrder order;    ///< the order units are taken in (fiber mode)
    /// A sampled launch: the units to run (taken in this order), how many of them run whatever
    /// they cost, and what each unit run wrote (guarded by `mu`).
    const std::vector<uint64_t>* sample = nullptr;
    std::size_t sample_required = 0;
    std::vector<UnitWrites> sample_writes;
    uint64_t seed = 0;  ///< the launch's schedule seed, from which each unit's is drawn
    std::atomic<bool> aborted{false};
    Fault fault;
    /// The watchdog: the launch's CPU-time budget (all cores), and the wall-clock time at which
    /// it is next compared with the CPU time used (watchdog_expired, launch.cpp).
    double cpu_start = 0, cpu_budget = 0;
    std::atomic<int64_t> next_check_ns{0};
    /// The grid this one depends on (programmatic dependent launch), still held back; may be null.
    HeldKernel* prerequisite = nullptr;
    /// Set by a kernel declared with __cluster_dims__ launched without those dimensions: the
    /// launch starts again with them (no thread has done anything but announce them).
    bool restart = false;
    dim3 restart_cluster{1, 1, 1};
    void record_fault(cudaError_t code, const std::string& text);
};

/// The lanes of one warp that meet at one warp operation.
struct WarpGroup {
    unsigned mask = 0, arrived = 0;
    WarpOp op = WarpOp::sync;
    const void* pc = nullptr;
    uint64_t value[32];
    int param[32];
    int width[32];
};

struct WarpState {
    unsigned existing_lanes = 0, live_lanes = 0;
    std::vector<WarpGroup> groups;
};

struct ThreadState {
    enum State : uint8_t { ready, running, at_barrier, at_cluster_barrier, at_warp_op, at_grid_wait, done, faulted };
    uint3 idx{0, 0, 0};
    int rank = 0, warp = 0, lane = 0;
    State state = ready;
    /// Cluster barrier: arrived at the phase in progress and not yet waited; the index of the
    /// phase its arrival completed (0 while that phase is open); the last phase it waited for.
    bool arrived = false;
    uint64_t arrival_done = 0;
    uint64_t cluster_view = 0;
    boost::context::fiber fiber, caller;
    boost::context::stack_context stack{};  ///< the fiber's stack, while it has one
    const void* wait_pc = nullptr;
    unsigned wait_mask = 0;
    WarpOp wait_op = WarpOp::sync;
    uint64_t warp_result = 0;
    /// Its last turn ended in a wait that polls (a volatile read, __nanosleep), not in work done.
    bool polled = false;
};

struct BlockState {
    uint3 idx{0, 0, 0};
    unsigned char* arena = nullptr;
    std::size_t poisoned = 0;  ///< bytes of the arena filled with NaN so far
    uint64_t epoch = 0;        ///< advances at every barrier the block completes
    int live = 0, at_barrier = 0;
    std::vector<WarpState> warps;
    std::vector<ThreadState*> threads;
};

/// One cluster of blocks (one block without clusters) interleaved on one worker.
struct UnitState {
    LaunchState* launch = nullptr;
    std::vector<BlockState> blocks;
    std::vector<ThreadState> threads;
    int live = 0;
    /// Cluster barrier phases: the index of the last completed one (indices grow across units on
    /// a worker, so a stale shadow entry is always ordered before a new unit's accesses), and the
    /// live threads that have not arrived at the open one.
    uint64_t cluster_phase = 0;
    int cluster_pending = 0;
    /// The rank of a block that starts late (-1: none). One block of each cluster starts only once
    /// the others can go no further; in half the clusters (`lone`, drawn) it then runs alone until
    /// it too waits, polls or exits (`solo`). The GPU promises nothing about how far one block of a
    /// cluster gets before another.
    int held = -1;
    bool lone = false, solo = false;
    uintptr_t arena_lo = 0;
    std::size_t arena_span = 0, arena_stride = 0;
    std::vector<std::pair<const void*, std::size_t>> slot_cache;
    /// The unit's schedule: its generator, and its warps as (first thread, lanes) in u.threads,
    /// shuffled before every pass over the ready threads.
    ScheduleRng rng;
    std::vector<std::pair<uint32_t, uint32_t>> warp_order;
};

/// One access as the race detector remembers it: the warp (rank * 32 + warp in the unit) and lane, its
/// block's barrier epoch then, and the cluster phase from which on other blocks see it ordered.
struct AccessTag {
    uint64_t epoch = 0, release = 0;
    const void* pc = nullptr;
    int warp = -1;
    int lane = 0;
};

/// Who made an access and where, without its ordering: enough to name it in a report.
struct AccessName {
    const void* pc = nullptr;
    int warp = -1, lane = 0;
};

/// Race-detector shadow of one 4-byte shared-memory word: the last write, and a read not yet
/// ordered before the next access (`read_multi`: more than one warp read it unordered;
/// `other_read`: the latest of those reads by a warp other than `read`'s, to name in a report).
/// `written`: one bit per byte written since the block's shared memory was poisoned.
struct ShadowWord {
    AccessTag write, read;
    AccessName other_read;
    bool read_multi = false;
    uint8_t written = 0;
};

/// The runtime is loaded with the program, so its thread-locals can live in static TLS.
#define EMU_FAST_TLS __attribute__((tls_model("initial-exec")))
extern thread_local EMU_FAST_TLS UnitState* tls_unit;
extern thread_local EMU_FAST_TLS ThreadState* tls_thread;

/// Checks one access to the running unit's shared memory against the race detector.
void shared_access(UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc);

/// The arena offset of a launch's first static __shared__ slot: its dynamic bytes, then a guard
/// (shared_memory.cpp).
std::size_t static_shared_start(std::size_t dynamic_bytes);
/// Faults an access that lands in the guard past the dynamic shared memory or past the last
/// static slot: on a GPU, dynamic shared memory comes last, so both run off the end of the
/// block's shared memory (shared_memory.cpp).
void check_shared_bounds(const UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc);

}  // namespace emu
