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

namespace emu {

/// One launch while it runs: its spec, the static-shared layout, the first fault.
struct LaunchState {
    LaunchSpec spec;
    const std::function<void()>* body = nullptr;
    std::size_t dynamic_bytes = 0;
    std::mutex mu;
    std::map<const void*, std::size_t> slots;  ///< static __shared__ declaration -> arena offset
    std::size_t static_end = 0;
    std::atomic<uint64_t> next_unit{0};
    std::atomic<bool> aborted{false};
    Fault fault;
    std::chrono::steady_clock::time_point deadline;
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
    enum State : uint8_t { ready, running, at_barrier, at_cluster_barrier, at_warp_op, done, faulted };
    uint3 idx{0, 0, 0};
    int rank = 0, warp = 0, lane = 0;
    State state = ready;
    boost::context::fiber fiber, caller;
    const void* wait_pc = nullptr;
    unsigned wait_mask = 0;
    WarpOp wait_op = WarpOp::sync;
    uint64_t warp_result = 0;
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
    int live = 0, at_cluster_barrier = 0;
    uintptr_t arena_lo = 0;
    std::size_t arena_span = 0, arena_stride = 0;
    std::vector<std::pair<const void*, std::size_t>> slot_cache;
};

/// Race-detector shadow of one 4-byte shared-memory word.
struct ShadowWord {
    uint64_t write_epoch = 0, read_epoch = 0;
    const void* write_pc = nullptr;
    const void* read_pc = nullptr;
    int write_warp = -1, read_warp = -1;
    bool read_multi = false;
};

/// The runtime is loaded with the program, so its thread-locals can live in static TLS.
#define EMU_FAST_TLS __attribute__((tls_model("initial-exec")))
extern thread_local EMU_FAST_TLS UnitState* tls_unit;
extern thread_local EMU_FAST_TLS ThreadState* tls_thread;

/// Checks one access to the running unit's shared memory against the race detector.
void shared_access(UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc);
/// Barrier over every thread of the running cluster (cooperative_groups cluster.sync()).
void cluster_sync();

}  // namespace emu
