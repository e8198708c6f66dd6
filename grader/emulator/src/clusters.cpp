/// @file clusters.cpp
/// @brief Thread-block clusters: dimensions, block ranks, distributed shared memory, __cluster_dims__.
#include <mutex>
#include <string>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

dim3 cluster_dims() {
    if (!tls_unit) return dim3(1, 1, 1);
    return tls_unit->launch->spec.cluster;
}

unsigned cluster_block_rank() { return tls_thread && tls_unit ? static_cast<unsigned>(tls_thread->rank) : 0u; }

void* map_shared_rank(const void* addr, unsigned rank) {
    ThreadState& t = current_fiber("cluster.map_shared_rank");
    UnitState& u = *tls_unit;
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (a - u.arena_lo >= u.arena_span)
        raise_fault(cudaErrorIllegalAddress, "illegal address: " + where_now() +
                                                 " maps an address that is not in shared memory to a cluster peer" +
                                                 at_line(pc) + " (map_shared_rank takes a pointer into __shared__ memory)");
    if (rank >= u.blocks.size())
        raise_fault(cudaErrorIllegalAddress, "illegal address: " + where_now() + " maps shared memory to block rank " +
                                                 std::to_string(rank) + " of a cluster of " +
                                                 std::to_string(u.blocks.size()) + " blocks" + at_line(pc));
    const std::size_t within = (a - u.arena_lo) % u.arena_stride;
    (void)t;
    return reinterpret_cast<void*>(u.arena_lo + rank * u.arena_stride + within);
}

unsigned query_shared_rank(const void* addr) {
    UnitState* u = tls_unit;
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (!u || a - u->arena_lo >= u->arena_span) return 0;
    return static_cast<unsigned>((a - u->arena_lo) / u->arena_stride);
}

void kernel_cluster_dims(unsigned x, unsigned y, unsigned z) {
    UnitState* u = tls_unit;
    if (!u) return;  // a plain-mode launch of the grader's own kernels
    LaunchState& l = *u->launch;
    const dim3 c = l.spec.cluster;
    if (c.x == x && c.y == y && c.z == z) return;
    if (c.x * c.y * c.z != 1)
        raise_fault(cudaErrorInvalidValue, "the kernel is declared with __cluster_dims__(" + std::to_string(x) + ", " +
                                               std::to_string(y) + ", " + std::to_string(z) +
                                               ") but launched with another cluster dimension");
    {
        std::lock_guard<std::mutex> lock(l.mu);
        l.restart = true;
        l.restart_cluster = dim3(x, y, z);
    }
    l.aborted = true;
    ThreadState& t = *tls_thread;
    t.state = ThreadState::faulted;
    for (;;) t.caller = std::move(t.caller).resume();
}

}  // namespace emu
