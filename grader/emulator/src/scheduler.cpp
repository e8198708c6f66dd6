/// @file scheduler.cpp
/// @brief Runs a grid: clusters of blocks on the CPU's cores, one fiber per CUDA thread,
///        block barriers, warp lockstep, shared memory and its race detector.
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "emu/control.h"
#include "internal.h"
#include "scheduler_state.h"

thread_local __attribute__((tls_model("initial-exec"))) uint3 threadIdx;
thread_local __attribute__((tls_model("initial-exec"))) uint3 blockIdx;
thread_local __attribute__((tls_model("initial-exec"))) uint3 blockDim;
thread_local __attribute__((tls_model("initial-exec"))) uint3 gridDim;

namespace emu {
namespace ctx = boost::context;

thread_local EMU_FAST_TLS UnitState* tls_unit = nullptr;
double g_watchdog_seconds = 20;
thread_local EMU_FAST_TLS ThreadState* tls_thread = nullptr;

namespace {

constexpr std::size_t kStackBytes = 64 * 1024;
std::atomic<int64_t> g_launch_started{0};
constexpr uint32_t kSharedPoison = 0x7fffffffu;  // NaN as fp32, like the grader's scribble on the GPU

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

/// The allocator handed to each fiber: a view on the worker's pool.
struct PooledStack {
    ctx::stack_context allocate() { return tls_stacks.allocate(); }
    void deallocate(ctx::stack_context& s) noexcept { tls_stacks.deallocate(s); }
};

/// Per worker: a monotonically growing epoch, so stale shadow entries never match.
thread_local EMU_FAST_TLS uint64_t tls_epoch = 0;
thread_local EMU_FAST_TLS std::vector<ShadowWord> tls_shadow;
thread_local EMU_FAST_TLS std::vector<unsigned char> tls_arena;

void fill_poison(unsigned char* p, std::size_t bytes) {
    for (std::size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(p + i, &kSharedPoison, 4);
    for (std::size_t i = bytes & ~std::size_t(3); i < bytes; ++i) p[i] = 0xff;
}

std::string dim_text(uint3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

std::string at_line(const void* pc) {
    const std::string line = source_line(pc);
    return line.empty() ? std::string() : " at " + line;
}

const char* op_name(WarpOp op) {
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

std::string hex(unsigned m) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", m);
    return b;
}

}  // namespace

// ---- fault handling ----------------------------------------------------------------------

std::string where_now() {
    ThreadState* t = tls_thread;
    if (!t || !tls_unit) return "";
    return "block " + dim_text(tls_unit->blocks[t->rank].idx) + " thread " + dim_text(t->idx);
}

void raise_fault(cudaError_t code, const std::string& text) {
    UnitState* u = tls_unit;
    ThreadState* t = tls_thread;
    if (!u || !t) {
        std::fprintf(stderr, "emulator: %s\n", text.c_str());
        std::abort();
    }
    u->launch->record_fault(code, text);
    t->state = ThreadState::faulted;
    // Back to the scheduler for good: it abandons this block, and this fiber is never resumed.
    for (;;) t->caller = std::move(t->caller).resume();
}

void LaunchState::record_fault(cudaError_t code, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    if (fault.code == cudaSuccess) {
        fault.code = code;
        fault.text = text;
    }
    aborted = true;
}

// ---- static and dynamic shared memory ----------------------------------------------------

void* shared_slot(const void* key, std::size_t bytes, std::size_t align) {
    UnitState* u = tls_unit;
    if (!u) raise_fault(cudaErrorLaunchFailure, "__shared__ memory used outside a kernel");
    BlockState& b = u->blocks[tls_thread->rank];
    LaunchState& l = *u->launch;
    std::size_t offset = 0;
    bool found = false;
    for (const auto& [k, off] : u->slot_cache)
        if (k == key) {
            offset = off;
            found = true;
            break;
        }
    if (!found) {
        std::lock_guard<std::mutex> lock(l.mu);
        auto it = l.slots.find(key);
        if (it == l.slots.end()) {
            std::size_t start = (l.static_end + align - 1) / align * align;
            it = l.slots.emplace(key, start).first;
            l.static_end = start + bytes;
        }
        offset = it->second;
        u->slot_cache.emplace_back(key, offset);
    }
    const std::size_t end = offset + bytes;
    const std::size_t total = end - l.dynamic_bytes;  // static bytes so far
    if (total > DeviceLimits::static_smem)
        raise_fault(cudaErrorLaunchOutOfResources,
                    "too much static __shared__ memory: " + std::to_string(total) +
                        " bytes, more than the 48 KB a kernel may declare statically (use dynamic shared memory "
                        "and cudaFuncSetAttribute for more)");
    if (end + l.dynamic_bytes > u->arena_stride)
        raise_fault(cudaErrorLaunchOutOfResources, "too much shared memory for one block");
    // A slot first seen in this block is poisoned now; known ones were poisoned at block start.
    if (end > b.poisoned) {
        fill_poison(b.arena + b.poisoned, end - b.poisoned);
        b.poisoned = end;
    }
    return b.arena + offset;
}

void* dynamic_shared() {
    UnitState* u = tls_unit;
    if (u) return u->blocks[tls_thread->rank].arena;
    return tls_arena.data();  // a plain-mode launch of the grader's own kernels
}

// ---- the race detector -------------------------------------------------------------------

namespace {

std::string warp_text(int gwarp, const UnitState& u) {
    const int rank = gwarp / 32, warp = gwarp % 32;
    std::string s = "warp " + std::to_string(warp);
    if (u.blocks.size() > 1) s += " of cluster block " + std::to_string(rank);
    return s;
}

[[noreturn]] void report_race(const UnitState& u, std::size_t word, int rank, const char* first_kind, int first_warp,
                              const void* first_pc, const char* second_kind, int second_warp, const void* second_pc) {
    std::ostringstream o;
    o << "shared-memory race on the 4-byte word at offset " << (word * 4) % u.arena_stride
      << " of block " << dim_text(u.blocks[rank].idx) << "'s shared memory: " << warp_text(first_warp, u) << " "
      << first_kind << " it" << at_line(first_pc) << ", then " << warp_text(second_warp, u) << " " << second_kind
      << " it" << at_line(second_pc) << " with no __syncthreads() between them";
    raise_fault(cudaErrorEmulatorSharedMemoryRace, o.str());
}

}  // namespace

void shared_access(UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc) {
    ThreadState& t = *tls_thread;
    const int gwarp = t.rank * 32 + t.warp;
    const std::size_t first = offset / 4, last = (offset + bytes - 1) / 4;
    const int rank = static_cast<int>(offset / u.arena_stride);
    const uint64_t epoch = u.blocks[rank].epoch;
    for (std::size_t w = first; w <= last; ++w) {
        ShadowWord& s = tls_shadow[w];
        if (write) {
            if (s.write_epoch == epoch && s.write_warp != gwarp)
                report_race(u, w, rank, "wrote", s.write_warp, s.write_pc, "wrote", gwarp, pc);
            if (s.read_epoch == epoch && (s.read_warp != gwarp || s.read_multi))
                report_race(u, w, rank, "read", s.read_warp, s.read_pc, "wrote", gwarp, pc);
            s.write_epoch = epoch;
            s.write_warp = gwarp;
            s.write_pc = pc;
        } else {
            if (s.write_epoch == epoch && s.write_warp != gwarp)
                report_race(u, w, rank, "wrote", s.write_warp, s.write_pc, "read", gwarp, pc);
            if (s.read_epoch != epoch) {
                s.read_epoch = epoch;
                s.read_warp = gwarp;
                s.read_pc = pc;
                s.read_multi = false;
            } else if (s.read_warp != gwarp) {
                s.read_multi = true;
            }
        }
    }
}

// ---- barriers ----------------------------------------------------------------------------

namespace {

void yield_to_scheduler(ThreadState& t) { t.caller = std::move(t.caller).resume(); }

ThreadState& current_fiber(const char* what) {
    if (!tls_thread || !tls_unit)
        raise_fault(cudaErrorLaunchFailure, std::string(what) + " called outside a kernel's fiber");
    return *tls_thread;
}

void release_barrier(UnitState& u, BlockState& b) {
    for (ThreadState* w : b.threads)
        if (w->state == ThreadState::at_barrier) w->state = ThreadState::ready;
    b.at_barrier = 0;
    b.epoch = ++tls_epoch;
}

void release_cluster_barrier(UnitState& u) {
    for (ThreadState& w : u.threads)
        if (w.state == ThreadState::at_cluster_barrier) w.state = ThreadState::ready;
    u.at_cluster_barrier = 0;
    for (BlockState& b : u.blocks) b.epoch = ++tls_epoch;
}

}  // namespace

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

void cluster_sync() {
    ThreadState& t = current_fiber("cluster.sync");
    t.wait_pc = __builtin_extract_return_addr(__builtin_return_address(0));
    UnitState& u = *tls_unit;
    t.state = ThreadState::at_cluster_barrier;
    if (++u.at_cluster_barrier == u.live) {
        release_cluster_barrier(u);
        t.state = ThreadState::running;
        return;
    }
    yield_to_scheduler(t);
}

void yield_thread() {
    if (!tls_thread || !tls_unit) return;
    ThreadState& t = *tls_thread;
    t.state = ThreadState::ready;
    yield_to_scheduler(t);
}

// ---- warp collectives --------------------------------------------------------------------

namespace {

/// Computes every participant's result once the last lane of `g` has arrived.
void complete_group(UnitState& u, BlockState& b, int warp, WarpGroup& g) {
    const int base_thread = warp * 32;
    for (int lane = 0; lane < 32; ++lane) {
        if (!(g.mask & (1u << lane))) continue;
        ThreadState& t = *b.threads[base_thread + lane];
        uint64_t r = 0;
        const int width = g.width[lane];
        const int seg = lane & ~(width - 1);
        int src = lane;
        switch (g.op) {
            case WarpOp::sync: break;
            case WarpOp::shfl_idx: src = seg + (g.param[lane] & (width - 1)); break;
            case WarpOp::shfl_up: src = lane - g.param[lane] < seg ? lane : lane - g.param[lane]; break;
            case WarpOp::shfl_down: src = lane + g.param[lane] >= seg + width ? lane : lane + g.param[lane]; break;
            case WarpOp::shfl_xor: {
                const int x = lane ^ g.param[lane];
                src = (x < seg || x >= seg + width) ? lane : x;
                break;
            }
            case WarpOp::ballot:
            case WarpOp::any:
            case WarpOp::all: {
                unsigned votes = 0;
                for (int l = 0; l < 32; ++l)
                    if ((g.mask & (1u << l)) && g.value[l]) votes |= 1u << l;
                r = g.op == WarpOp::ballot ? votes : g.op == WarpOp::any ? votes != 0 : votes == g.mask;
                break;
            }
            case WarpOp::match_any: {
                unsigned same = 0;
                for (int l = 0; l < 32; ++l)
                    if ((g.mask & (1u << l)) && g.value[l] == g.value[lane]) same |= 1u << l;
                r = same;
                break;
            }
            case WarpOp::activemask: break;
        }
        if (g.op >= WarpOp::shfl_idx && g.op <= WarpOp::shfl_xor) {
            if (src != lane && !(g.mask & (1u << src))) {
                raise_fault(cudaErrorEmulatorWarpSync,
                            std::string(op_name(g.op)) + " in warp " + std::to_string(warp) + ": lane " +
                                std::to_string(lane) + " reads lane " + std::to_string(src) +
                                ", which is not in the mask " + hex(g.mask) + at_line(g.pc) +
                                " (the value is undefined on the GPU)");
            }
            r = g.value[src];
        }
        t.warp_result = r;
        if (t.state == ThreadState::at_warp_op) t.state = ThreadState::ready;
    }
}

}  // namespace

uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int param, int width) {
    ThreadState& t = current_fiber(op_name(op));
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    UnitState& u = *tls_unit;
    BlockState& b = u.blocks[t.rank];
    const unsigned me = 1u << t.lane;
    if (op == WarpOp::activemask) return b.warps[t.warp].live_lanes;
    if (width < 1 || width > 32 || (width & (width - 1)))
        raise_fault(cudaErrorEmulatorWarpSync, std::string(op_name(op)) + " with width " + std::to_string(width) +
                                                   ": the width must be a power of two from 1 to 32" + at_line(pc));
    if (!(mask & me))
        raise_fault(cudaErrorEmulatorWarpSync, std::string(op_name(op)) + " in warp " + std::to_string(t.warp) +
                                                   ": lane " + std::to_string(t.lane) + " calls it with the mask " +
                                                   hex(mask) + ", which does not name the lane itself" + at_line(pc));
    // Lanes past the end of a partial last warp do not exist; they are not waited for.
    mask &= b.warps[t.warp].existing_lanes;
    WarpState& w = b.warps[t.warp];
    WarpGroup* g = nullptr;
    for (WarpGroup& c : w.groups)
        if (c.mask == mask && !(c.arrived & me)) {
            g = &c;
            break;
        }
    if (!g) {
        w.groups.emplace_back();
        g = &w.groups.back();
        g->mask = mask;
        g->op = op;
        g->pc = pc;
    }
    if (g->op != op)
        raise_fault(cudaErrorEmulatorWarpSync,
                    "warp " + std::to_string(t.warp) + " diverged: lanes of mask " + hex(mask) + " meet at " +
                        op_name(g->op) + at_line(g->pc) + " and at " + op_name(op) + at_line(pc) +
                        "; every lane named in the mask must execute the same warp operation");
    g->arrived |= me;
    g->value[t.lane] = value;
    g->param[t.lane] = param;
    g->width[t.lane] = width;
    t.wait_pc = pc;
    if (g->arrived == g->mask) {
        complete_group(u, b, t.warp, *g);
        w.groups.erase(w.groups.begin() + (g - w.groups.data()));
        return t.warp_result;
    }
    t.state = ThreadState::at_warp_op;
    t.wait_mask = mask;
    t.wait_op = op;
    yield_to_scheduler(t);
    return t.warp_result;
}

// ---- running a unit (one block, or one cluster of blocks) --------------------------------

namespace {

/// The explanation of a unit in which every live thread waits and none can go on.
std::string deadlock_text(const UnitState& u) {
    std::ostringstream o;
    bool barrier = false;
    for (const BlockState& b : u.blocks) {
        std::map<std::string, int> waits;
        int done = 0;
        for (const ThreadState* t : b.threads) {
            switch (t->state) {
                case ThreadState::at_barrier: waits["__syncthreads()" + at_line(t->wait_pc)]++; barrier = true; break;
                case ThreadState::at_cluster_barrier: waits["cluster.sync()" + at_line(t->wait_pc)]++; break;
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
    if (u.at_cluster_barrier > 0 && u.at_cluster_barrier == u.live) release_cluster_barrier(u);
}

/// Fibers of a faulted unit are never resumed; their stacks are given up, not unwound.
void abandon(UnitState& u) {
    for (ThreadState& t : u.threads)
        if (t.fiber) new ctx::fiber(std::move(t.fiber));
}

void run_unit_fibers(LaunchState& l, UnitState& u) {
    for (;;) {
        if (std::chrono::steady_clock::now() > l.deadline) {
            tls_thread = nullptr;
            l.record_fault(cudaErrorLaunchTimeout,
                           "the kernel did not finish within " + std::to_string(static_cast<int>(g_watchdog_seconds)) +
                               " s on the emulator (a hang: a loop that never ends, or a barrier some threads never "
                               "reach)");
            abandon(u);
            return;
        }
        bool progressed = false;
        for (ThreadState& t : u.threads) {
            if (t.state != ThreadState::ready) continue;
            progressed = true;
            set_indices(u, t);
            tls_thread = &t;
            t.state = ThreadState::running;
            if (!t.fiber) {
                t.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [&l, &u, &t](ctx::fiber&& caller) {
                    t.caller = std::move(caller);
                    (*l.body)();
                    thread_exited(u, t);
                    return std::move(t.caller);
                });
            }
            t.fiber = std::move(t.fiber).resume();
            if (l.aborted.load(std::memory_order_relaxed)) {
                abandon(u);
                return;
            }
        }
        if (u.live == 0) return;
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
    u.at_cluster_barrier = 0;
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
        fill_poison(b.arena, static_known);
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
            b.threads[i] = &t;
        }
    }
}

/// The grader's own element-wise kernels: one plain call per thread, no fibers.
void run_block_plain(LaunchState& l, uint64_t block) {
    const LaunchSpec& s = l.spec;
    blockIdx = uint3{static_cast<unsigned>(block % s.grid.x), static_cast<unsigned>((block / s.grid.x) % s.grid.y),
                     static_cast<unsigned>(block / (uint64_t(s.grid.x) * s.grid.y))};
    if (tls_arena.size() < l.dynamic_bytes) tls_arena.resize(l.dynamic_bytes);
    for (unsigned z = 0; z < s.block.z; ++z)
        for (unsigned y = 0; y < s.block.y; ++y)
            for (unsigned x = 0; x < s.block.x; ++x) {
                threadIdx = uint3{x, y, z};
                (*l.body)();
            }
}

void worker(LaunchState& l, uint64_t units, unsigned per_unit) {
    blockDim = l.spec.block;
    gridDim = l.spec.grid;
    UnitState u;
    for (;;) {
        const uint64_t i = l.next_unit.fetch_add(1);
        if (i >= units || l.aborted.load(std::memory_order_relaxed)) break;
        if (l.spec.mode == LaunchMode::plain) {
            run_block_plain(l, i);
            continue;
        }
        prepare_unit(l, u, i * per_unit);
        tls_unit = &u;
        run_unit_fibers(l, u);
        tls_unit = nullptr;
        tls_thread = nullptr;
    }
}

/// Threads that live as long as the process, so their fiber stacks, shared-memory arenas and
/// race-detector shadows are made once, not at every launch. The caller works too.
class WorkerPool {
public:
    static WorkerPool& instance() {
        static WorkerPool* pool = new WorkerPool;  // never joined: the process exits with _Exit
        return *pool;
    }
    /// Runs `job` on every worker and on the calling thread; returns when all are done.
    void run(const std::function<void()>& job) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            job_ = &job;
            busy_ = static_cast<int>(threads_.size());
            ++generation_;
        }
        start_.notify_all();
        job();
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [this] { return busy_ == 0; });
        job_ = nullptr;
    }

private:
    WorkerPool() {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned i = 1; i < cores; ++i) threads_.emplace_back([this] { loop(); });
    }
    void loop() {
        uint64_t seen = 0;
        for (;;) {
            const std::function<void()>* job;
            {
                std::unique_lock<std::mutex> lock(mu_);
                start_.wait(lock, [&] { return generation_ != seen; });
                seen = generation_;
                job = job_;
            }
            (*job)();
            std::lock_guard<std::mutex> lock(mu_);
            if (--busy_ == 0) done_.notify_all();
        }
    }
    std::mutex mu_;
    std::condition_variable start_, done_;
    const std::function<void()>* job_ = nullptr;
    uint64_t generation_ = 0;
    int busy_ = 0;
    std::vector<std::thread> threads_;
};

/// A thread that spins without reaching a barrier, a warp operation or __nanosleep never
/// yields its fiber; this timer ends the run if a launch outlives its deadline by 10 s.
class HardWatchdog {
public:
    HardWatchdog() {
        static std::once_flag once;
        std::call_once(once, [] {
            std::thread([] {
                for (;;) {
                    std::this_thread::sleep_for(std::chrono::seconds(1));
                    const int64_t started = g_launch_started.load();
                    if (!started) continue;
                    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now().time_since_epoch()).count();
                    if (static_cast<double>(now - started) / 1e9 > g_watchdog_seconds + 10) {
                        std::printf("\nthe kernel did not finish within %d s on the emulator (a hang: a loop that "
                                    "never ends and never reaches a barrier); stopping.\n",
                                    static_cast<int>(g_watchdog_seconds));
                        std::fflush(stdout);
                        std::_Exit(1);
                    }
                }
            }).detach();
        });
        g_launch_started = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch()).count();
    }
    ~HardWatchdog() { g_launch_started = 0; }
};

}  // namespace

void set_watchdog_seconds(double seconds) { g_watchdog_seconds = seconds > 0 ? seconds : 20; }

Fault execute(const LaunchSpec& spec, const std::function<void()>& body, int /*max_dynamic_smem*/) {
    LaunchState l;
    l.deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(g_watchdog_seconds * 1000));
    HardWatchdog guard;
    l.spec = spec;
    l.body = &body;
    l.dynamic_bytes = spec.dynamic_smem;
    l.static_end = spec.dynamic_smem;
    const unsigned per_unit = spec.cluster.x * spec.cluster.y * spec.cluster.z;
    const uint64_t blocks = uint64_t(spec.grid.x) * spec.grid.y * spec.grid.z;
    const uint64_t units = blocks / per_unit;
    if (units <= 1) worker(l, units, per_unit);
    else WorkerPool::instance().run([&] { worker(l, units, per_unit); });
    return l.fault;
}

}  // namespace emu

namespace emu {

// Programmatic dependent launch. Work runs in issue order, so by the time a dependent grid
// starts its producer has finished; pdl.cpp models the overlap where a lesson needs it.
void grid_dependency_wait() {}
void trigger_dependents() {}

}  // namespace emu
