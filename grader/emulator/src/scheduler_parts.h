/// @file scheduler_parts.h
/// @brief What the scheduler's source files share among themselves (hidden outside libwbemu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "internal.h"
#include "scheduler_state.h"

#pragma GCC visibility push(hidden)

namespace emu {

// ---- the worker thread's state (defined where it is used most) ---------------------------

/// Per worker: a monotonically growing epoch, so stale shadow entries never match, and the
/// same for cluster barrier phases (barriers.cpp, fiber_scheduler.cpp).
extern thread_local EMU_FAST_TLS uint64_t tls_epoch;
extern thread_local EMU_FAST_TLS uint64_t tls_phase;
/// The plain-mode launch this worker runs a slice of (those threads have no fiber or unit; launch.cpp).
extern thread_local EMU_FAST_TLS LaunchState* tls_plain_launch;
/// The race detector's shadow of the shared-memory arena (race_detector.cpp).
extern thread_local EMU_FAST_TLS std::vector<ShadowWord> tls_shadow;
/// The shared-memory arena of the unit this worker runs (shared_memory.cpp).
extern thread_local EMU_FAST_TLS std::vector<unsigned char> tls_arena;
/// How long a launch may run before it is reported as a hang (launch.cpp).
extern double g_watchdog_seconds;
/// True once launch `l` has used its CPU-time budget (launch.cpp): a hang.
bool watchdog_expired(LaunchState& l);

// ---- words for the reports (faults.cpp) --------------------------------------------------

std::string dim_text(uint3 d);
std::string at_line(const void* pc);
std::string hex(unsigned m);

inline const char* op_name(WarpOp op) {
    switch (op) {
        case WarpOp::sync: return "__syncwarp";
        case WarpOp::shfl_idx: return "__shfl_sync";
        case WarpOp::shfl_up: return "__shfl_up_sync";
        case WarpOp::shfl_down: return "__shfl_down_sync";
        case WarpOp::shfl_xor: return "__shfl_xor_sync";
        case WarpOp::ballot: return "__ballot_sync";
        case WarpOp::any: return "__any_sync";
        case WarpOp::all: return "__all_sync";
        case WarpOp::activemask: return "__activemask";
        case WarpOp::match_any: return "__match_any_sync";
    }
    return "a warp operation";
}

// ---- fibers ------------------------------------------------------------------------------

inline void yield_to_scheduler(ThreadState& t) { t.caller = std::move(t.caller).resume(); }

inline ThreadState& current_fiber(const char* what) {
    if (!tls_thread || !tls_unit)
        raise_fault(cudaErrorLaunchFailure, std::string(what) + " called outside a kernel's fiber");
    return *tls_thread;
}

/// Fills shared memory with NaN, as the grader's scribble does on the GPU (shared_memory.cpp).
void fill_poison(unsigned char* p, std::size_t bytes);

/// Every thread at the block's barrier goes on (barriers.cpp).
void release_barrier(UnitState& u, BlockState& b);
/// Every live thread of the cluster has arrived: the phase completes, its waiters go on (barriers.cpp).
void complete_cluster_phase(UnitState& u);

/// Runs a held-back prerequisite grid from inside a running unit (grid_dependency.cpp).
void run_nested(HeldKernel& k);

/// Sets up unit `u` of launch `l`, whose first block is `first_block` (fiber_scheduler.cpp).
void prepare_unit(LaunchState& l, UnitState& u, uint64_t first_block);
/// Runs every fiber of a prepared unit until all exit, one faults, or none can go on (fiber_scheduler.cpp).
void run_unit_fibers(LaunchState& l, UnitState& u);

}  // namespace emu

#pragma GCC visibility pop
