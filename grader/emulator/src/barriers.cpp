/// @file barriers.cpp
/// @brief Barriers: the block's __syncthreads() and the cluster barrier (arrive, wait, sync).
#include <string>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

thread_local EMU_FAST_TLS uint64_t tls_epoch = 0;

void release_barrier(UnitState& u, BlockState& b) {
    for (ThreadState* w : b.threads)
        if (w->state == ThreadState::at_barrier) w->state = ThreadState::ready;
    b.at_barrier = 0;
    b.epoch = ++tls_epoch;
}

/// Every live thread of the cluster has arrived: the phase completes, its waiters go on.
void complete_cluster_phase(UnitState& u) {
    const uint64_t phase = ++u.cluster_phase;
    int live = 0;
    for (ThreadState& w : u.threads) {
        if (w.state == ThreadState::done || w.state == ThreadState::faulted) continue;
        ++live;
        if (w.arrived && w.arrival_done == 0) {
            w.arrival_done = phase;
            if (w.state == ThreadState::at_cluster_barrier) w.state = ThreadState::ready;
        }
    }
    u.cluster_pending = live;
}

void syncthreads() {
    ThreadState& t = current_fiber("__syncthreads");
    t.wait_pc = __builtin_extract_return_addr(__builtin_return_address(0));
    UnitState& u = *tls_unit;
    BlockState& b = u.blocks[t.rank];
    t.state = ThreadState::at_barrier;
    if (++b.at_barrier == b.live) {
        release_barrier(u, b);
        t.state = ThreadState::running;
        return;
    }
    yield_to_scheduler(t);
}

void cluster_arrive() {
    ThreadState& t = current_fiber("cluster barrier_arrive");
    UnitState& u = *tls_unit;
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    if (t.arrived)
        raise_fault(cudaErrorEmulatorDivergentBarrier,
                    where_now() + " arrives at the cluster barrier twice without waiting in between" + at_line(pc) +
                        " (each barrier_arrive() needs its barrier_wait() before the next arrive)");
    t.arrived = true;
    t.arrival_done = 0;
    t.wait_pc = pc;
    if (--u.cluster_pending == 0) complete_cluster_phase(u);
}

void cluster_wait() {
    ThreadState& t = current_fiber("cluster barrier_wait");
    UnitState& u = *tls_unit;
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    if (!t.arrived)
        raise_fault(cudaErrorEmulatorDivergentBarrier,
                    where_now() + " waits at the cluster barrier without having arrived" + at_line(pc) +
                        " (call barrier_arrive() first, or cluster.sync() for both)");
    if (t.arrival_done == 0) {
        t.wait_pc = pc;
        t.state = ThreadState::at_cluster_barrier;
        yield_to_scheduler(t);
    }
    (void)u;
    t.cluster_view = t.arrival_done;
    t.arrived = false;
}

void cluster_sync() {
    ThreadState& t = current_fiber("cluster.sync");
    UnitState& u = *tls_unit;
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    if (t.arrived)
        raise_fault(cudaErrorEmulatorDivergentBarrier,
                    where_now() + " calls cluster.sync() after barrier_arrive() without barrier_wait()" + at_line(pc));
    t.arrived = true;
    t.arrival_done = 0;
    t.wait_pc = pc;
    if (--u.cluster_pending == 0) {
        complete_cluster_phase(u);
    } else {
        t.state = ThreadState::at_cluster_barrier;
        yield_to_scheduler(t);
    }
    t.cluster_view = t.arrival_done;
    t.arrived = false;
}

}  // namespace emu
