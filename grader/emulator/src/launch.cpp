/// @file launch.cpp
/// @brief Runs a validated launch: its units spread over a pool of worker threads, under a watchdog.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "emu/control.h"
#include "internal.h"
#include "sampling.h"
#include "scheduler_order.h"
#include "traffic.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

double g_watchdog_seconds = 20;
thread_local EMU_FAST_TLS LaunchState* tls_plain_launch = nullptr;

namespace {

/// A launch of a sampled call with more units than this runs a sample of them.
constexpr uint64_t kSampleAbove = 16;
/// Bytes the optional units of a sample may write before the rest of them are left out.
constexpr uint64_t kSampleBytes = uint64_t(16) << 20;

/// The grader's own element-wise kernels: one plain call per thread, no fibers.
/// Their threads never wait for each other, so a unit is a slice of a block's threads: a grid
/// of one block (the oracle over a few long rows) still runs on every core.
void run_block_plain(LaunchState& l, uint64_t unit, unsigned slices) {
    const LaunchSpec& s = l.spec;
    const uint64_t block = unit / slices;
    blockIdx = uint3{static_cast<unsigned>(block % s.grid.x), static_cast<unsigned>((block / s.grid.x) % s.grid.y),
                     static_cast<unsigned>(block / (uint64_t(s.grid.x) * s.grid.y))};
    if (tls_arena.size() < l.dynamic_bytes) tls_arena.resize(l.dynamic_bytes);
    const unsigned threads = s.block.x * s.block.y * s.block.z;
    const unsigned per_slice = (threads + slices - 1) / slices;
    const unsigned first = static_cast<unsigned>(unit % slices) * per_slice;
    const unsigned end = std::min(threads, first + per_slice);
    if (s.block.y == 1 && s.block.z == 1) {  // the usual shape: no divisions per thread
        for (unsigned i = first; i < end; ++i) {
            threadIdx = uint3{i, 0, 0};
            (*l.body)();
        }
        return;
    }
    for (unsigned i = first; i < end; ++i) {
        threadIdx = uint3{i % s.block.x, (i / s.block.x) % s.block.y, i / (s.block.x * s.block.y)};
        (*l.body)();
    }
}

/// Slices per block of a plain-mode launch: enough units for every core when the grid is small.
unsigned plain_slices(const LaunchSpec& s) {
    const uint64_t blocks = uint64_t(s.grid.x) * s.grid.y * s.grid.z;
    const unsigned threads = s.block.x * s.block.y * s.block.z;
    if (blocks >= 64) return 1;
    return std::max(1u, std::min(threads / 32, static_cast<unsigned>(64 / blocks)));
}

/// Runs units of the launch until none is left (or `limit` of them ran); false when none was left.
/// A sampled launch takes its units from `l.sample`, recording what each wrote, and stops taking
/// the optional ones once the sample has written enough.
bool worker(LaunchState& l, uint64_t units, unsigned per_unit, uint64_t limit = ~uint64_t(0)) {
    blockDim = l.spec.block;
    gridDim = l.spec.grid;
    UnitState u;
    const uint64_t count = l.sample ? l.sample->size() : units;
    for (uint64_t ran = 0; ran < limit; ++ran) {
        const uint64_t taken = l.next_unit.fetch_add(1);
        if (taken >= count) return false;
        if (l.aborted.load(std::memory_order_relaxed)) break;
        if (l.spec.mode == LaunchMode::plain) {
            tls_plain_launch = &l;
            run_block_plain(l, taken, per_unit);
            tls_plain_launch = nullptr;
            continue;
        }
        UnitWrites writes;
        if (l.sample) {
            if (taken >= l.sample_required && sampled_bytes_written() > kSampleBytes) continue;
            writes.unit = (*l.sample)[taken];
            tls_unit_writes = &writes;
        }
        const uint64_t i = l.sample ? writes.unit : l.order.at(taken);
        prepare_unit(l, u, i * per_unit);
        tls_unit = &u;
        const bool traced = traffic_recording() && !tls_trace;  // a grid run nested in a traced unit is not
        if (traced) begin_unit_trace(l, u);
        run_unit_fibers(l, u);
        if (traced) end_unit_trace();
        tls_phase = std::max(tls_phase, u.cluster_phase);
        tls_unit = nullptr;
        tls_thread = nullptr;
        if (l.sample) {
            tls_unit_writes = nullptr;
            std::lock_guard<std::mutex> lock(l.mu);
            l.sample_writes.push_back(std::move(writes));
        }
    }
    return true;
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

/// CPU seconds the process has used, all its threads together.
double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int64_t wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// The cores a launch's units are spread over (the pool's threads and the caller).
double cores() { return std::max(1u, std::thread::hardware_concurrency()); }

/// CPU seconds a launch may use before it counts as a hang: the watchdog's seconds on every core.
/// The budget is CPU time, not wall time, so a machine busy with other work slows a kernel down
/// without making it a hang.
double cpu_budget() { return g_watchdog_seconds * cores(); }

std::atomic<double> g_launch_cpu_started{0};

/// A thread that spins without reaching a barrier, a warp operation or __nanosleep never
/// yields its fiber; this timer ends the run if a launch outlives its CPU budget by 10 s a core.
class HardWatchdog {
public:
    HardWatchdog() : outer_(g_launch_cpu_started.load()) {
        static std::once_flag once;
        std::call_once(once, [] {
            std::thread([] {
                for (;;) {
                    std::this_thread::sleep_for(std::chrono::seconds(1));
                    const double started = g_launch_cpu_started.load();
                    if (started == 0) continue;
                    if (process_cpu_seconds() - started > cpu_budget() + 10 * cores()) {
                        std::printf("\nthe kernel did not finish within %d s of work on every core of the emulator "
                                    "(a hang: a loop that never ends and never reaches a barrier); stopping.\n",
                                    static_cast<int>(g_watchdog_seconds));
                        std::fflush(stdout);
                        std::_Exit(1);
                    }
                }
            }).detach();
        });
        g_launch_cpu_started = std::max(1e-9, process_cpu_seconds());
    }
    /// A grid run inside another (a programmatic prerequisite) hands the watch back when it ends.
    ~HardWatchdog() { g_launch_cpu_started = outer_; }

private:
    double outer_;
};

}  // namespace

/// Runs a launch of an open sampled call (docs/emulator.md, "Sampled calls"): the first sample,
/// then, twice at most, the units the sample's writes say should write the grader's target rows
/// that nothing wrote yet.
static void run_sampled(LaunchState& l, uint64_t units, unsigned per_unit) {
    begin_sampled_launch();
    std::size_t required = 0;
    std::vector<uint64_t> list = first_sample(units, sampling_seed(), required);
    for (int round = 0; round < 3 && !list.empty() && !l.aborted; ++round) {
        l.sample = &list;
        l.sample_required = required;
        l.next_unit = 0;
        WorkerPool::instance().run([&] { worker(l, units, per_unit); });
        if (l.aborted || l.restart) break;
        list = units_for_missing_targets(units, l.sample_writes);
        required = list.size();
    }
    l.sample = nullptr;
    if (!l.restart) record_sampled_launch(units, l.sample_writes.size());
}

bool watchdog_expired(LaunchState& l) {
    // A cheap wall-clock test first: the CPU time is read only once the launch could have used
    // its budget, and the next check is put off by the time the rest of it takes on every core.
    const int64_t now = wall_ns();
    if (now < l.next_check_ns.load(std::memory_order_relaxed)) return false;
    const double left = l.cpu_budget - (process_cpu_seconds() - l.cpu_start);
    if (left <= 0) return true;
    l.next_check_ns.store(now + static_cast<int64_t>(std::max(0.5, left / cores()) * 1e9), std::memory_order_relaxed);
    return false;
}

void set_watchdog_seconds(double seconds) { g_watchdog_seconds = seconds > 0 ? seconds : 20; }

Fault execute(const LaunchSpec& launch_spec, const std::function<void()>& body,
              const std::shared_ptr<HeldKernel>& prerequisite) {
    HardWatchdog guard;
    const double cpu_start = process_cpu_seconds();
    const bool nested_in_trace = tls_trace != nullptr;  // a prerequisite grid run from inside a traced unit
    LaunchSpec spec = launch_spec;
    // The grader's own kernels are grid-stride loops over blockIdx.x (LaunchMode::plain): as a
    // grid of a few blocks they visit the same elements, without a call per element.
    constexpr unsigned kPlainBlocks = 64;
    if (spec.mode == LaunchMode::plain && spec.grid.y == 1 && spec.grid.z == 1 && spec.grid.x > kPlainBlocks)
        spec.grid.x = kPlainBlocks;
    // The GPU promises no order between blocks, nor between the warps of a block: each launch of a
    // submission's kernel takes its units in an order drawn from the grade's seed (the reverse of
    // the previous one's on every other launch of a kernel), and its warps in a drawn order too,
    // so a result that depends on either differs between two launches on the same inputs.
    // A kernel is its function (cudaLaunchKernelEx) or its launch's call (<<<...>>>, one per
    // kernel and argument types).
    const void* kernel = spec.kernel ? spec.kernel : static_cast<const void*>(&body.target_type());
    for (bool restarted = false;; restarted = true) {
        LaunchState l;
        l.cpu_start = cpu_start;
        l.cpu_budget = cpu_budget();
        l.next_check_ns = wall_ns() + static_cast<int64_t>(g_watchdog_seconds * 1e9);
        l.spec = spec;
        l.body = &body;
        l.dynamic_bytes = spec.dynamic_smem;
        l.static_start = static_shared_start(spec.dynamic_smem);
        l.static_end = l.static_start;
        l.prerequisite = prerequisite.get();
        // A unit: one cluster of blocks (fiber mode), or a slice of a block (plain mode, where
        // per_unit counts slices).
        const bool plain = spec.mode == LaunchMode::plain;
        const unsigned per_unit = plain ? plain_slices(spec) : spec.cluster.x * spec.cluster.y * spec.cluster.z;
        const uint64_t blocks = uint64_t(spec.grid.x) * spec.grid.y * spec.grid.z;
        const uint64_t units = plain ? blocks * per_unit : blocks / per_unit;
        if (!plain) l.order = next_unit_order(kernel, units, l.seed, restarted);
        const bool sampled = !plain && sampling_open() && units > kSampleAbove;
        // A sampled launch does not model the early start of programmatic dependent launch: the
        // grid it depends on runs first.
        if (sampled && prerequisite && !prerequisite->done()) prerequisite->complete();
        if (prerequisite && !prerequisite->done()) {
            // Until the grid this one depends on has run, units run one at a time on this thread,
            // so which reads come before that grid's writes does not depend on timing.
            while (!prerequisite->done() && !l.aborted && worker(l, units, per_unit, 1)) {}
            if (!l.restart) {
                l.prerequisite = nullptr;
                prerequisite->complete();  // nothing waited for it: it runs after this grid
            }
        }
        if (sampled) {
            run_sampled(l, units, per_unit);
        } else if (!l.aborted) {
            if (units - std::min(units, l.next_unit.load()) <= 1) worker(l, units, per_unit);
            else WorkerPool::instance().run([&] { worker(l, units, per_unit); });
        }
        if (!plain && !l.restart && traffic_recording() && !nested_in_trace)
            end_launch_trace(l, units, sampled ? l.sample_writes.size() : units,
                             l.dynamic_bytes + (l.static_end - l.static_start));
        if (!l.restart) return l.fault;
        // A kernel declared with __cluster_dims__: run again with its clusters, as the GPU launches it.
        spec.cluster = l.restart_cluster;
        std::string why;
        const cudaError_t invalid = validate(spec, why);
        if (invalid != cudaSuccess) return Fault{invalid, why};
    }
}

}  // namespace emu
