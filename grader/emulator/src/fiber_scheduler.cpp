/// @file fiber_scheduler.cpp
/// @brief Runs one unit (a block, or a cluster of blocks) on a worker: one fiber per CUDA thread.
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"
#include "traffic.h"

// The running thread's indices (emu/device.h): set before each fiber is resumed.
thread_local __attribute__((tls_model("initial-exec"))) uint3 threadIdx;
thread_local __attribute__((tls_model("initial-exec"))) uint3 blockIdx;
thread_local __attribute__((tls_model("initial-exec"))) uint3 blockDim;
thread_local __attribute__((tls_model("initial-exec"))) uint3 gridDim;

namespace emu {
namespace ctx = boost::context;

thread_local EMU_FAST_TLS UnitState* tls_unit = nullptr;
thread_local EMU_FAST_TLS ThreadState* tls_thread = nullptr;
thread_local EMU_FAST_TLS uint64_t tls_phase = 0;

namespace {

constexpr std::size_t kStackBytes = 64 * 1024;

/// Fiber stacks are reused: a block of 1024 threads would otherwise map 1024 stacks.
class StackPool {
public:
    ctx::stack_context allocate() {
        if (!free_.empty()) {
            ctx::stack_context s = free_.back();
            free_.pop_back();
            return s;
        }
        return alloc_.allocate();
    }
    void deallocate(ctx::stack_context& s) noexcept { free_.push_back(s); }

private:
    ctx::protected_fixedsize_stack alloc_{kStackBytes};
    std::vector<ctx::stack_context> free_;
};
thread_local EMU_FAST_TLS StackPool tls_stacks;

/// The allocator handed to each fiber: a view on the worker's pool that also tells the thread
/// which stack it got, so the stack of a fiber given up after a fault can be reused.
struct PooledStack {
    ThreadState* owner;
    ctx::stack_context allocate() { return owner->stack = tls_stacks.allocate(); }
    void deallocate(ctx::stack_context& s) noexcept {
        owner->stack = ctx::stack_context{};
        tls_stacks.deallocate(s);
    }
};

}  // namespace

void yield_thread() {
    if (!tls_thread || !tls_unit) return;
    ThreadState& t = *tls_thread;
    t.state = ThreadState::ready;
    t.polled = true;
    yield_to_scheduler(t);
}

namespace {

/// The explanation of a unit in which every live thread waits and none can go on.
std::string deadlock_text(const UnitState& u) {
    std::ostringstream o;
    bool barrier = false, cluster = false;
    for (const BlockState& b : u.blocks) {
        std::map<std::string, int> waits;
        int done = 0;
        for (const ThreadState* t : b.threads) {
            switch (t->state) {
                case ThreadState::at_barrier: waits["__syncthreads()" + at_line(t->wait_pc)]++; barrier = true; break;
                case ThreadState::at_cluster_barrier:
                    waits["the cluster barrier" + at_line(t->wait_pc)]++;
                    cluster = true;
                    break;
                case ThreadState::at_warp_op:
                    waits[std::string(op_name(t->wait_op)) + " (mask " + hex(t->wait_mask) + ")" + at_line(t->wait_pc)]++;
                    break;
                case ThreadState::done: ++done; break;
                default: break;
            }
        }
        o << "block " << dim_text(b.idx) << ": ";
        bool first = true;
        for (const auto& [where, n] : waits) {
            o << (first ? "" : ", ") << n << " thread(s) wait at " << where;
            first = false;
        }
        if (done) o << (first ? "" : ", ") << done << " thread(s) have exited";
        o << ". ";
    }
    std::string head = barrier ? "divergent barrier: not every thread of the block reaches __syncthreads(), so the "
                                 "waiting threads would hang on the GPU. "
                       : cluster ? "divergent cluster barrier: not every thread of the cluster arrives at the cluster "
                                   "barrier (cluster.sync() or barrier_arrive), so the waiting threads would hang on the GPU. "
                               : "warp operations that can never complete: a lane named in the mask never reaches "
                                 "the same operation (it exited or waits elsewhere), so the warp would hang on the GPU. ";
    return head + o.str();
}

void set_indices(const UnitState& u, const ThreadState& t) {
    threadIdx = t.idx;
    blockIdx = u.blocks[t.rank].idx;
}

void thread_exited(UnitState& u, ThreadState& t) {
    BlockState& b = u.blocks[t.rank];
    t.state = ThreadState::done;
    --b.live;
    --u.live;
    b.warps[t.warp].live_lanes &= ~(1u << t.lane);
    if (b.at_barrier > 0 && b.at_barrier == b.live) release_barrier(u, b);
    // A thread that leaves without arriving no longer holds the cluster barrier up.
    if (!(t.arrived && t.arrival_done == 0) && --u.cluster_pending == 0) {
        bool someone_waits = false;
        for (const ThreadState& w : u.threads) someone_waits |= w.arrived && w.arrival_done == 0;
        if (someone_waits) complete_cluster_phase(u);
    }
}

/// Fibers of a faulted unit are never resumed and never unwound (that would run the kernel's
/// code on): each handle is dropped without its destructor, and its stack goes back to the
/// pool. Left mapped, the stacks of a few faulted 16-block clusters exhaust the process's
/// memory mappings.
void abandon(UnitState& u) {
    for (ThreadState& t : u.threads) {
        if (!t.fiber) continue;
        alignas(ctx::fiber) static thread_local unsigned char sink[sizeof(ctx::fiber)];
        new (sink) ctx::fiber(std::move(t.fiber));  // overwritten by the next one, never destroyed
        if (t.stack.sp) tls_stacks.deallocate(t.stack);
        t.stack = ctx::stack_context{};
    }
}

/// Draws the order of the unit's warps for the next pass (Fisher-Yates).
void shuffle_warps(UnitState& u) {
    auto& w = u.warp_order;
    for (std::size_t i = w.size(); i > 1; --i) std::swap(w[i - 1], w[u.rng.below(i)]);
}

}  // namespace

void run_unit_fibers(LaunchState& l, UnitState& u) {
    for (;;) {
        if (watchdog_expired(l)) {
            tls_thread = nullptr;
            l.record_fault(cudaErrorLaunchTimeout,
                           "the kernel did not finish within " + std::to_string(static_cast<int>(g_watchdog_seconds)) +
                               " s of work on every core of the emulator (a hang: a loop that never ends, or a "
                               "barrier some threads never reach; or more work than the emulator runs in that "
                               "time, such as one block doing every row of a large case: "
                               "WORKBOOK_WATCHDOG_SECONDS=S gives it S seconds)");
            abandon(u);
            return;
        }
        bool progressed = false, worked = false;
        // Ready warps run in a drawn order, each from a drawn lane: on the GPU neither the warp
        // that reaches a barrier or an atomic first nor the order of the rest is promised.
        shuffle_warps(u);
        for (const auto& [first, lanes] : u.warp_order) {
            const uint32_t start = lanes > 1 ? static_cast<uint32_t>(u.rng.below(lanes)) : 0;
            for (uint32_t k = 0; k < lanes; ++k) {
                ThreadState& t = u.threads[first + (start + k) % lanes];
                if (t.state != ThreadState::ready || (u.held >= 0 && (t.rank == u.held) != u.solo)) continue;
                progressed = true;
                t.polled = false;
                set_indices(u, t);
                tls_thread = &t;
                t.state = ThreadState::running;
                if (!t.fiber) {
                    t.fiber = ctx::fiber(std::allocator_arg, PooledStack{&t}, [&l, &u, &t](ctx::fiber&& caller) {
                        t.caller = std::move(caller);
                        (*l.body)();
                        thread_exited(u, t);
                        return std::move(t.caller);
                    });
                }
                t.fiber = std::move(t.fiber).resume();
                worked |= !t.polled;
                if (tls_trace) trace_thread_paused(static_cast<int>(&t - u.threads.data()));
                if (l.aborted.load(std::memory_order_relaxed)) {
                    abandon(u);
                    return;
                }
            }
        }
        if (u.live == 0) return;
        if (u.held >= 0 && !worked) {
            // The blocks that ran wait, poll or have exited: the late block starts (alone first, in
            // a lone cluster, until it too can go no further), then every block runs.
            if (u.lone && !u.solo) {
                u.solo = true;
            } else {
                u.held = -1;
                u.solo = false;
            }
            continue;
        }
        if (!progressed && l.prerequisite) {
            // Every thread that can run has reached its grid-dependency wait (or another wait):
            // now the grid this one depends on runs, and the waiting threads go on.
            bool waiting = false;
            for (ThreadState& t : u.threads) waiting |= t.state == ThreadState::at_grid_wait;
            if (waiting) {
                run_nested(*l.prerequisite);
                for (ThreadState& t : u.threads)
                    if (t.state == ThreadState::at_grid_wait) t.state = ThreadState::ready;
                continue;
            }
        }
        if (!progressed) {
            tls_thread = nullptr;
            l.record_fault(cudaErrorEmulatorDivergentBarrier, deadlock_text(u));
            abandon(u);
            return;
        }
    }
}

void prepare_unit(LaunchState& l, UnitState& u, uint64_t first_block) {
    const LaunchSpec& s = l.spec;
    const unsigned nb = s.cluster.x * s.cluster.y * s.cluster.z;
    const unsigned nt = s.block.x * s.block.y * s.block.z;
    u.launch = &l;
    u.live = static_cast<int>(nb * nt);
    u.cluster_pending = u.live;
    // Two indices past anything this worker used: stale shadow entries are ordered before this unit.
    tls_phase += 2;
    u.cluster_phase = tls_phase;
    u.slot_cache.clear();
    std::size_t static_known;
    {
        std::lock_guard<std::mutex> lock(l.mu);
        static_known = l.static_end;
    }
    u.arena_stride = (l.dynamic_bytes + DeviceLimits::optin_smem + 15) / 16 * 16;
    const std::size_t arena_bytes = u.arena_stride * nb;
    if (tls_arena.size() < arena_bytes) tls_arena.resize(arena_bytes);
    if (tls_shadow.size() < arena_bytes / 4) tls_shadow.resize(arena_bytes / 4);
    u.arena_lo = reinterpret_cast<uintptr_t>(tls_arena.data());
    u.arena_span = arena_bytes;
    u.blocks.resize(nb);
    u.threads.resize(static_cast<std::size_t>(nb) * nt);
    // The unit's schedule depends on the launch's seed and the unit, not on the worker that runs it.
    u.rng.state = mix64(l.seed ^ mix64(first_block + 1));
    u.held = nb > 1 ? static_cast<int>(u.rng.below(nb)) : -1;
    u.lone = nb > 1 && u.rng.below(2) == 1;
    u.solo = false;
    u.warp_order.clear();
    for (unsigned r = 0; r < nb; ++r)
        for (unsigned w = 0; w * 32 < nt; ++w)
            u.warp_order.emplace_back(r * nt + w * 32, std::min(32u, nt - w * 32));
    const uint64_t gx = s.grid.x, gy = s.grid.y;
    for (unsigned r = 0; r < nb; ++r) {
        BlockState& b = u.blocks[r];
        // Blocks of a cluster are consecutive in x (clusters are numbered by their first block).
        const uint64_t cx = s.cluster.x, cy = s.cluster.y;
        const uint64_t clusters_x = gx / cx, clusters_y = gy / cy;
        const uint64_t cl = first_block / nb;
        const uint64_t ccx = cl % clusters_x, ccy = (cl / clusters_x) % clusters_y, ccz = cl / (clusters_x * clusters_y);
        b.idx = uint3{static_cast<unsigned>(ccx * cx + r % cx), static_cast<unsigned>(ccy * cy + (r / cx) % cy),
                      static_cast<unsigned>(ccz * s.cluster.z + r / (cx * cy))};
        b.arena = tls_arena.data() + r * u.arena_stride;
        b.poisoned = static_known;
        fill_poison(b.arena, l.dynamic_bytes);
        fill_poison(b.arena + l.static_start, static_known - l.static_start);
        b.epoch = ++tls_epoch;
        b.live = static_cast<int>(nt);
        b.at_barrier = 0;
        const unsigned warps = (nt + 31) / 32;
        b.warps.assign(warps, WarpState{});
        for (unsigned w = 0; w < warps; ++w) {
            const unsigned n = std::min(32u, nt - w * 32);
            b.warps[w].existing_lanes = n == 32 ? 0xffffffffu : (1u << n) - 1;
            b.warps[w].live_lanes = b.warps[w].existing_lanes;
        }
        b.threads.resize(nt);
        for (unsigned i = 0; i < nt; ++i) {
            ThreadState& t = u.threads[static_cast<std::size_t>(r) * nt + i];
            t = ThreadState{};
            t.idx = uint3{i % s.block.x, (i / s.block.x) % s.block.y, i / (s.block.x * s.block.y)};
            t.rank = static_cast<int>(r);
            t.warp = static_cast<int>(i / 32);
            t.lane = static_cast<int>(i % 32);
            t.state = ThreadState::ready;
            t.cluster_view = u.cluster_phase;
            b.threads[i] = &t;
        }
    }
}

}  // namespace emu
