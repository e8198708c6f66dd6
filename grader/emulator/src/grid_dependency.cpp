/// @file grid_dependency.cpp
/// @brief Programmatic dependent launch: a grid's wait for its prerequisite, which then runs nested.
#include <utility>
#include <vector>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

void grid_dependency_wait() {
    UnitState* u = tls_unit;
    if (!u) {
        // A plain-mode thread cannot be paused: its prerequisite, still held only while the
        // launch's slices run one at a time on this thread, runs here and now.
        LaunchState* l = tls_plain_launch;
        if (l && l->prerequisite && !l->prerequisite->done()) run_nested(*l->prerequisite);
        return;
    }
    HeldKernel* p = u->launch->prerequisite;
    if (!p || p->done()) return;
    // The prerequisite grid runs when no thread of this unit can go on without it, so every
    // read a thread makes before its wait sees memory as it was before that grid.
    ThreadState& t = *tls_thread;
    t.wait_pc = __builtin_extract_return_addr(__builtin_return_address(0));
    t.state = ThreadState::at_grid_wait;
    yield_to_scheduler(t);
}

/// The emulator lets a dependent grid start at its launch, as if every block of this grid had
/// triggered at once: the earliest start the GPU allows.
void trigger_dependents() {}

/// Runs a held-back prerequisite grid from inside a running unit, on this thread: the unit's
/// thread-locals (indices, shared-memory arena, race shadow) are set aside and put back after.
/// The arena keeps its address while set aside (a moved vector keeps its buffer).
void run_nested(HeldKernel& k) {
    UnitState* const unit = tls_unit;
    ThreadState* const thread = tls_thread;
    LaunchState* const plain = tls_plain_launch;
    const uint3 ti = threadIdx, bi = blockIdx, bd = blockDim, gd = gridDim;
    std::vector<unsigned char> arena = std::move(tls_arena);
    std::vector<ShadowWord> shadow = std::move(tls_shadow);
    tls_arena.clear();
    tls_shadow.clear();
    tls_unit = nullptr;
    tls_thread = nullptr;
    k.complete();
    tls_arena = std::move(arena);
    tls_shadow = std::move(shadow);
    tls_unit = unit;
    tls_thread = thread;
    tls_plain_launch = plain;
    threadIdx = ti;
    blockIdx = bi;
    blockDim = bd;
    gridDim = gd;
}

}  // namespace emu
