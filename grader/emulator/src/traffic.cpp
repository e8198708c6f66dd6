/// @file traffic.cpp
/// @brief The traffic recorder: warp-level requests (the lanes' accesses from one instruction),
///        the 32-byte sectors they touch, shared-memory bank conflicts, the loads a thread keeps in
///        flight, and a model of the DRAM traffic behind a 50 MB L2, scaled from the sampled units
///        to the grid.
#include "traffic.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "internal.h"
#include "scheduler_state.h"

namespace emu {

thread_local UnitTrace* tls_trace = nullptr;

namespace {

/// The device a prediction is made for: an H100 (SXM).
constexpr double kL2Bytes = 50.0 * 1024 * 1024;
constexpr int kSms = DeviceLimits::sm_count;
constexpr int kThreadsPerSm = 2048;
constexpr int kBlocksPerSm = 32;

/// The lanes' accesses from one dynamic instruction of one warp.
struct Request {
    std::vector<uint64_t> sectors;                       ///< global: 32-byte sectors (with repeats)
    std::vector<std::pair<uint32_t, uint32_t>> words;    ///< shared: (lane, byte offset) of each access
    uint32_t width = 0;                                  ///< bytes per lane access
    bool shared = false;
};

/// What the recording holds across launches: the sectors earlier launches of the call read, and
/// whether they fit in the L2 (a later launch's read of them is then an L2 hit).
struct Recording {
    std::mutex mu;
    std::atomic<bool> on{false};
    std::vector<TrafficLaunch> launches;
    std::unordered_set<uint64_t> earlier_sectors;
    double earlier_footprint = 0;
    /// The launch in progress: sectors read and written, by the number of units touching them.
    std::unordered_map<uint64_t, uint32_t> reads, writes;
    double reread_bytes = 0;
    TrafficLaunch current;
    double inflight_sum = 0, inflight_runs = 0;
    double concurrency = 1;
};

Recording& rec() {
    static Recording* r = new Recording;
    return *r;
}

/// Shared-memory wavefronts of one request: the accesses split into phases (a 4-byte access a
/// warp at a time, 8 bytes a half-warp, 16 a quarter-warp), each phase as many wavefronts as the
/// most distinct 4-byte words any one bank is asked for.
double wavefronts(const Request& q, double& phases) {
    const uint32_t per_phase = q.width >= 16 ? 8 : q.width >= 8 ? 16 : 32;
    std::unordered_map<uint32_t, std::vector<std::unordered_set<uint32_t>>> by_phase;
    for (const auto& [lane, offset] : q.words) {
        auto& banks = by_phase[lane / per_phase];
        if (banks.empty()) banks.resize(32);
        for (uint32_t b = 0; b < std::max(4u, q.width); b += 4) {
            const uint32_t word = (offset + b) / 4;
            banks[word % 32].insert(word);
        }
    }
    double total = 0;
    for (const auto& [phase, banks] : by_phase) {
        std::size_t most = 0;
        for (const auto& s : banks) most = std::max(most, s.size());
        total += static_cast<double>(std::max<std::size_t>(most, 1));
    }
    phases += static_cast<double>(by_phase.size());
    return total;
}

}  // namespace

/// One unit's trace on one worker.
class UnitTrace {
public:
    UnitTrace(double concurrency, int threads) : concurrency_(concurrency), steps_(threads, 0) {}

    /// One access of kernel code. g++ copies a 16-byte vector type field by field where nvcc issues
    /// one instruction, so back-to-back accesses of one thread to consecutive bytes of one aligned
    /// 16-byte window are one access here, as they are one instruction on the GPU.
    void access(int thread, int warp, uintptr_t address, std::size_t bytes, bool write, bool shared, const void* pc) {
        Pending& p = pending_[thread];
        if (p.bytes && p.write == write && p.shared == shared && address == p.address + p.bytes &&
            p.address / 16 == (address + bytes - 1) / 16) {
            p.bytes += bytes;
            return;
        }
        flush(thread);
        p = Pending{address, bytes, pc, warp, write, shared};
    }

    /// Every thread's access still being gathered is complete.
    void flush_all() {
        for (auto& [thread, p] : pending_)
            if (p.bytes) flush(thread);
    }

    void paused(int thread) {
        flush(thread);
        end_run(thread);
    }

private:
    struct Pending {
        uintptr_t address = 0;
        std::size_t bytes = 0;
        const void* pc = nullptr;
        int warp = 0;
        bool write = false, shared = false;
    };

    void flush(int thread) {
        auto it = pending_.find(thread);
        if (it == pending_.end() || it->second.bytes == 0) return;
        const Pending p = it->second;
        it->second.bytes = 0;
        record(thread, p.warp, p.address, p.bytes, p.write, p.shared, p.pc);
    }

    void record(int thread, int warp, uintptr_t address, std::size_t bytes, bool write, bool shared, const void* pc) {
        const uint64_t site = (static_cast<uint64_t>(thread) << 48) ^ reinterpret_cast<uintptr_t>(pc);
        const uint32_t nth = occurrences_[site]++;
        const uint64_t key = (static_cast<uint64_t>(warp) << 48) ^ (reinterpret_cast<uintptr_t>(pc) * 0x9e3779b1ull) ^
                             (static_cast<uint64_t>(nth) << 20) ^ (shared ? 1ull : 0ull) ^ (write ? 2ull : 0ull);
        Request& q = requests_[key];
        q.shared = shared;
        q.width = std::max<uint32_t>(q.width, static_cast<uint32_t>(bytes));
        if (shared) {
            q.words.emplace_back(static_cast<uint32_t>(thread % 32), static_cast<uint32_t>(address));
            return;
        }
        lane_bytes_ += static_cast<double>(bytes);
        lane_accesses_ += 1;
        // On the GPU a unit's threads run together; here one runs until it waits. So an access is
        // placed in time by how far its thread is through its own accesses (its step).
        const uint32_t step = steps_[static_cast<std::size_t>(thread) % steps_.size()]++;
        for (uint64_t s = address / 32; s <= (address + bytes - 1) / 32; ++s) {
            q.sectors.push_back(s);
            events_.push_back(Event{s, static_cast<uint32_t>(thread), step, write});
            if (write) written_.insert(s);
            else read_.insert(s);
        }
        if (!write) {
            Run& r = runs_[thread];
            r.loads += 1;
            r.bytes += static_cast<double>(bytes);
        }
    }

    void end_run(int thread) {
        auto it = runs_.find(thread);
        if (it == runs_.end() || it->second.loads == 0) return;
        // Loads a thread issues between two waits: a few (up to 8) are independent and all in
        // flight at once, as the lessons' kernels load their vectors; more than that is a loop
        // whose body uses each value, which the GPU's compiler unrolls about 4 times.
        const Run& r = it->second;
        const double in_flight = r.loads <= 8 ? r.loads : 4;
        inflight_sum_ += in_flight * r.bytes / r.loads;
        inflight_runs_ += 1;
        runs_.erase(it);
    }

public:
    /// Adds this unit's figures to the recording's launch in progress.
    void fold(Recording& g) {
        flush_all();
        std::vector<int> left;
        for (const auto& [thread, run] : runs_) left.push_back(thread);
        for (int thread : left) end_run(thread);
        double requests = 0, sectors = 0, shared_requests = 0, shared_waves = 0, phases = 0;
        for (auto& [key, q] : requests_) {
            if (q.shared) {
                shared_requests += 1;
                shared_waves += wavefronts(q, phases);
                continue;
            }
            std::sort(q.sectors.begin(), q.sectors.end());
            q.sectors.erase(std::unique(q.sectors.begin(), q.sectors.end()), q.sectors.end());
            requests += 1;
            sectors += static_cast<double>(q.sectors.size());
        }
        const double reread = reread_bytes();
        std::lock_guard<std::mutex> lock(g.mu);
        TrafficLaunch& t = g.current;
        t.global_requests += requests;
        t.global_sectors += sectors;
        t.global_lane_bytes += lane_bytes_;
        t.global_lane_accesses += lane_accesses_;
        t.shared_requests += shared_requests;
        t.shared_wavefronts += shared_waves - phases;  // past one wavefront a phase: bank conflicts
        for (uint64_t s : read_) ++g.reads[s];
        for (uint64_t s : written_) ++g.writes[s];
        g.reread_bytes += reread;
        g.inflight_sum += inflight_sum_;
        g.inflight_runs += inflight_runs_;
    }

private:
    struct Run {
        double loads = 0, bytes = 0;
    };
    /// One sector access of a global load or store.
    struct Event {
        uint64_t sector;
        uint32_t thread, step;
        bool write;
    };

    /// Bytes read again from DRAM: an access's LRU stack distance (the distinct sectors the unit
    /// touched since its previous access of the sector), times the units running at once, past the
    /// L2's size. Time is each thread's progress through its own accesses, as if they kept pace.
    double reread_bytes() {
        std::vector<std::pair<double, std::size_t>> order;
        order.reserve(events_.size());
        for (std::size_t i = 0; i < events_.size(); ++i) {
            const Event& e = events_[i];
            order.emplace_back((e.step + 0.5) / std::max<uint32_t>(1, steps_[e.thread]), i);
        }
        std::stable_sort(order.begin(), order.end());
        std::vector<int> marks(order.size() + 1, 0);  // Fenwick tree: 1 at each sector's latest position
        auto add = [&](std::size_t i, int v) {
            for (++i; i < marks.size(); i += i & (~i + 1)) marks[i] += v;
        };
        auto prefix = [&](std::size_t i) {  // marks at positions < i
            int n = 0;
            for (; i > 0; i -= i & (~i + 1)) n += marks[i];
            return n;
        };
        std::unordered_map<uint64_t, std::size_t> last;
        double bytes = 0;
        for (std::size_t pos = 0; pos < order.size(); ++pos) {
            const Event& e = events_[order[pos].second];
            auto it = last.find(e.sector);
            if (it != last.end()) {
                const double distance = 32.0 * (prefix(pos) - prefix(it->second + 1));
                if (!e.write && distance * concurrency_ > kL2Bytes) bytes += 32;
                add(it->second, -1);
                it->second = pos;
            } else {
                last.emplace(e.sector, pos);
            }
            add(pos, 1);
        }
        return bytes;
    }

    double concurrency_;
    std::vector<uint32_t> steps_;  ///< accesses of each thread so far
    std::vector<Event> events_;
    std::unordered_map<uint64_t, uint32_t> occurrences_;
    std::unordered_map<uint64_t, Request> requests_;
    std::unordered_set<uint64_t> read_, written_;
    std::unordered_map<int, Run> runs_;
    std::unordered_map<int, Pending> pending_;
    double lane_bytes_ = 0, lane_accesses_ = 0, inflight_sum_ = 0, inflight_runs_ = 0;
};

bool traffic_recording() { return rec().on.load(std::memory_order_acquire); }

void begin_traffic() {
    Recording& g = rec();
    std::lock_guard<std::mutex> lock(g.mu);
    g.launches.clear();
    g.earlier_sectors.clear();
    g.earlier_footprint = 0;
    g.reads.clear();
    g.writes.clear();
    g.reread_bytes = g.inflight_sum = g.inflight_runs = 0;
    g.current = TrafficLaunch{};
    g.on.store(true, std::memory_order_release);
}

std::vector<TrafficLaunch> end_traffic() {
    Recording& g = rec();
    std::lock_guard<std::mutex> lock(g.mu);
    g.on.store(false, std::memory_order_release);
    g.earlier_sectors.clear();
    return std::move(g.launches);
}

void begin_unit_trace(const LaunchState& l, const UnitState& u) {
    const unsigned threads = l.spec.block.x * l.spec.block.y * l.spec.block.z;
    const unsigned per_unit = static_cast<unsigned>(u.blocks.size());
    // Units resident on the GPU at once: what the threads allow (shared memory is counted at the
    // end), and no more than the grid has.
    const double per_sm = std::max(1u, std::min<unsigned>(kBlocksPerSm, kThreadsPerSm / std::max(1u, threads)) / per_unit);
    const double units = static_cast<double>(uint64_t(l.spec.grid.x) * l.spec.grid.y * l.spec.grid.z / per_unit);
    rec().concurrency = std::max(1.0, std::min(units, kSms * per_sm));
    tls_trace = new UnitTrace(rec().concurrency, static_cast<int>(u.threads.size()));
}

void end_unit_trace() {
    if (!tls_trace) return;
    tls_trace->fold(rec());
    delete tls_trace;
    tls_trace = nullptr;
}

void trace_access(uintptr_t address, std::size_t bytes, bool write, bool shared, const void* pc) {
    UnitTrace* t = tls_trace;
    ThreadState* th = tls_thread;
    UnitState* u = tls_unit;
    if (!t || !th || !u) return;
    const int thread = static_cast<int>(th - u->threads.data());
    const int warp = thread / 32;  // threads of a unit are laid out block by block, 32 a warp
    t->access(thread, warp, shared ? address - u->arena_lo : address, bytes, write, shared, pc);
}

void trace_thread_paused(int thread) {
    if (tls_trace) tls_trace->paused(thread);
}

void end_launch_trace(const LaunchState& l, uint64_t units, uint64_t units_run, std::size_t shared_bytes) {
    Recording& g = rec();
    std::lock_guard<std::mutex> lock(g.mu);
    TrafficLaunch t = g.current;
    t.units = units;
    t.units_run = units_run;
    t.threads_per_block = l.spec.block.x * l.spec.block.y * l.spec.block.z;
    t.blocks_per_unit = l.spec.cluster.x * l.spec.cluster.y * l.spec.cluster.z;
    t.grid_blocks = uint64_t(l.spec.grid.x) * l.spec.grid.y * l.spec.grid.z;
    t.shared_bytes_per_block = shared_bytes;
    const double scale = units_run ? static_cast<double>(units) / static_cast<double>(units_run) : 1.0;
    // A sector one sampled unit touched is that unit's own (its rows): there are `scale` times as
    // many in the grid. One several units touched (the weight) is read once for the whole grid.
    // A sector an earlier launch of the call read is an L2 hit if that launch's footprint fit.
    const bool earlier_fits = g.earlier_footprint > 0 && g.earlier_footprint <= kL2Bytes;
    double own = 0, common = 0;
    for (const auto& [s, n] : g.reads) {
        if (earlier_fits && g.earlier_sectors.count(s)) continue;
        (n == 1 ? own : common) += 32;
    }
    t.dram_read_bytes = (own + g.reread_bytes) * scale + common;
    own = common = 0;
    for (const auto& [s, n] : g.writes) (n == 1 ? own : common) += 32;
    t.dram_write_bytes = own * scale + common;
    t.inflight_bytes_per_thread = g.inflight_runs > 0 ? g.inflight_sum / g.inflight_runs : 0;
    const double footprint = t.dram_read_bytes + t.dram_write_bytes;
    for (const auto& [s, n] : g.reads) g.earlier_sectors.insert(s);
    for (const auto& [s, n] : g.writes) g.earlier_sectors.insert(s);
    g.earlier_footprint = footprint;
    g.launches.push_back(t);
    g.reads.clear();
    g.writes.clear();
    g.reread_bytes = g.inflight_sum = g.inflight_runs = 0;
    g.current = TrafficLaunch{};
}

}  // namespace emu
