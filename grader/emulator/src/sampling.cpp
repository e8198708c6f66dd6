/// @file sampling.cpp
/// @brief Large calls on a sample of blocks: lazy ranges (contents on first touch), the units a
///        sampled launch runs, and the model that finds the units writing the grader's target rows.
#include "sampling.h"

#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "emu/control.h"
#include "internal.h"
#include "scheduler_order.h"

namespace emu {

thread_local UnitWrites* tls_unit_writes = nullptr;

namespace {

constexpr int kChunkShift = 16;  ///< lazy contents come in 64 KiB chunks

struct Target {
    int64_t row = 0;
    uintptr_t lo = 0, hi = 0;
    std::atomic<bool> hit{false};
};

/// One lazy allocation of the open call.
struct LazyRange {
    uintptr_t start = 0;
    std::size_t bytes = 0;
    LazyFill fill;
    RowOf row_of;
    std::unique_ptr<std::atomic<uint8_t>[]> filled;  ///< per chunk: has its contents
    std::size_t chunks = 0;
    std::mutex mu;  ///< held while a chunk is being filled
    std::unique_ptr<Target[]> targets;
    std::size_t target_count = 0;
};

struct Sampling {
    std::mutex mu;
    std::atomic<bool> open{false};
    uint64_t seed = 0;
    /// Added and removed only while no kernel runs (the grader's fills and frees), read by kernels.
    std::vector<std::unique_ptr<LazyRange>> ranges;
    std::vector<SampledLaunch> launches;
    std::atomic<uint64_t> written{0};
};

Sampling& state() {
    static Sampling* s = new Sampling;  // never destroyed: kernels may run while the process exits
    return *s;
}

/// Set while this thread runs a range's filler.
thread_local bool tls_filling = false;

LazyRange* find_range(uintptr_t a, std::size_t* index = nullptr) {
    Sampling& s = state();
    for (std::size_t i = 0; i < s.ranges.size(); ++i) {
        LazyRange& r = *s.ranges[i];
        if (a - r.start < r.bytes) {
            if (index) *index = i;
            return &r;
        }
    }
    return nullptr;
}

constexpr std::size_t kChunk = std::size_t(1) << kChunkShift;

/// The whole chunks of a lazy range: what protect and unprotect cover (its allocation owns them:
/// allocations are whole 64 KiB granules).
std::size_t chunk_span(const LazyRange& r) { return r.chunks << kChunkShift; }

/// Gives the chunks of `r` under [offset, offset + bytes) their contents, once. A chunk without its
/// contents is mapped with no access (protect_range), so that every access reaches this first: an
/// instrumented one through lazy_touch, any other (the grader's own code, and a kernel's load that
/// GCC's ThreadSanitizer pass does not instrument: an aggregate such as a `__half` passed by value
/// straight from memory to a function) through the fault handler. The contents are built in pages
/// of their own and moved over the chunk in one step (mremap), so no thread ever finds the chunk
/// readable before its contents are in: an uninstrumented access in that window would not fault,
/// and would read zeros or have its store overwritten by the fill.
void fill_chunks(LazyRange& r, std::size_t offset, std::size_t bytes) {
    if (bytes == 0) return;
    const std::size_t first = offset >> kChunkShift;
    const std::size_t last = std::min(r.chunks - 1, (offset + bytes - 1) >> kChunkShift);
    for (std::size_t c = first; c <= last; ++c) {
        if (r.filled[c].load(std::memory_order_acquire)) continue;
        std::lock_guard<std::mutex> lock(r.mu);
        if (r.filled[c].load(std::memory_order_relaxed)) continue;
        const std::size_t lo = c << kChunkShift;
        const std::size_t n = std::min(r.bytes - lo, kChunk);
        void* chunk = reinterpret_cast<void*>(r.start + lo);
        void* built = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (built == MAP_FAILED) built = nullptr;
        thread_local std::vector<unsigned char> aside;
        if (!built) aside.resize(kChunk);
        unsigned char* out = built ? static_cast<unsigned char*>(built) : aside.data();
        tls_filling = true;  // the filler's own stores (instrumented, in a test) are not kernel accesses
        r.fill(lo, n, out);
        tls_filling = false;
        if (!built || mremap(built, kChunk, kChunk, MREMAP_MAYMOVE | MREMAP_FIXED, chunk) == MAP_FAILED) {
            // Out of memory mappings (each filled chunk is one): the whole range becomes ordinary
            // memory, one mapping again; its chunks without contents read zeros, as they did before
            // chunks were protected, where the compiler leaves an access unreported.
            mprotect(reinterpret_cast<void*>(r.start), chunk_span(r), PROT_READ | PROT_WRITE);
            std::memcpy(chunk, out, n);
            if (built) munmap(built, kChunk);
        }
        r.filled[c].store(1, std::memory_order_release);
    }
}

/// The handler in force before ours: a fault outside a lazy chunk goes back to it.
struct sigaction g_previous_segv;

/// A fault on a chunk of a lazy range without its contents: fill it, and the access runs again.
void on_segv(int sig, siginfo_t* info, void* context) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    for (const auto& range : state().ranges) {
        LazyRange& r = *range;
        // The whole chunks: a read past the allocation's end, inside its last granule, fills too.
        if (a - r.start >= chunk_span(r)) continue;
        const std::size_t c = (a - r.start) >> kChunkShift;
        // Another thread may have filled the chunk between this fault and now: then there is
        // nothing to fill, and the access runs again all the same.
        if (!r.filled[c].load(std::memory_order_acquire)) fill_chunks(r, a - r.start, 1);
        if (mprotect(reinterpret_cast<void*>(r.start + (c << kChunkShift)), kChunk, PROT_READ | PROT_WRITE) == 0)
            return;
        break;
    }
    // Not ours (a stack overflow into a fiber's guard page, a wild pointer): as before.
    if (g_previous_segv.sa_flags & SA_SIGINFO) {
        if (g_previous_segv.sa_sigaction) return g_previous_segv.sa_sigaction(sig, info, context);
    } else if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN) {
        return g_previous_segv.sa_handler(sig);
    }
    sigaction(SIGSEGV, &g_previous_segv, nullptr);  // the access faults again, with the default action
}

/// Installs on_segv, once.
void install_fault_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &g_previous_segv);
    });
}

}  // namespace

bool sampling_open() { return state().open.load(std::memory_order_acquire); }

uint64_t sampling_seed() { return state().seed; }

void lazy_touch(uintptr_t a, std::size_t bytes, bool write) {
    if (tls_filling) return;
    std::size_t index = 0;
    LazyRange* r = find_range(a, &index);
    if (!r) return;
    fill_chunks(*r, a - r->start, bytes);
    if (!write) return;
    state().written.fetch_add(bytes, std::memory_order_relaxed);
    if (UnitWrites* w = tls_unit_writes) {
        if (w->lowest.size() <= index) {
            w->lowest.resize(index + 1, ~uintptr_t(0));
            w->bytes.resize(index + 1, 0);
        }
        w->lowest[index] = std::min(w->lowest[index], a);
        w->bytes[index] += bytes;
    }
    for (std::size_t i = 0; i < r->target_count; ++i) {
        Target& t = r->targets[i];
        if (a < t.hi && a + bytes > t.lo && !t.hit.load(std::memory_order_relaxed))
            t.hit.store(true, std::memory_order_relaxed);
    }
}

void forget_lazy_range(uintptr_t start) {
    Sampling& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.ranges.erase(std::remove_if(s.ranges.begin(), s.ranges.end(),
                                  [&](const std::unique_ptr<LazyRange>& r) {
                                      if (r->start != start) return false;
                                      // Its chunks without contents become ordinary memory again.
                                      mprotect(reinterpret_cast<void*>(r->start), chunk_span(*r), PROT_READ | PROT_WRITE);
                                      return true;
                                  }),
                   s.ranges.end());
}

void begin_sampled_call(uint64_t seed) {
    Sampling& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.seed = seed;
    s.launches.clear();
    s.open.store(true, std::memory_order_release);
}

void end_sampled_call() {
    Sampling& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    for (const auto& r : s.ranges) {
        set_allocation_lazy(reinterpret_cast<const void*>(r->start), false);
        mprotect(reinterpret_cast<void*>(r->start), chunk_span(*r), PROT_READ | PROT_WRITE);
    }
    s.ranges.clear();
    s.open.store(false, std::memory_order_release);
}

void add_lazy_range(void* start, std::size_t bytes, LazyFill fill, RowOf row_of, std::vector<TargetRow> targets) {
    Sampling& s = state();
    auto r = std::make_unique<LazyRange>();
    r->start = reinterpret_cast<uintptr_t>(start);
    r->bytes = bytes;
    r->fill = std::move(fill);
    r->row_of = std::move(row_of);
    r->chunks = (bytes + (std::size_t(1) << kChunkShift) - 1) >> kChunkShift;
    r->filled.reset(new std::atomic<uint8_t>[r->chunks ? r->chunks : 1]);
    for (std::size_t c = 0; c < r->chunks; ++c) r->filled[c].store(0, std::memory_order_relaxed);
    r->target_count = targets.size();
    r->targets.reset(new Target[targets.size() ? targets.size() : 1]);
    for (std::size_t i = 0; i < targets.size(); ++i) {
        r->targets[i].row = targets[i].row;
        r->targets[i].lo = r->start + targets[i].lo;
        r->targets[i].hi = r->start + targets[i].hi;
    }
    install_fault_handler();
    mprotect(start, chunk_span(*r), PROT_NONE);  // every access, instrumented or not, fills first
    {
        std::lock_guard<std::mutex> lock(s.mu);
        s.ranges.push_back(std::move(r));
    }
    set_allocation_lazy(start, true);
}

void materialize(const void* p, std::size_t bytes) {
    if (!sampling_open() || bytes == 0) return;
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uintptr_t end = a + bytes;
    Sampling& s = state();
    for (const auto& r : s.ranges) {
        const uintptr_t lo = std::max(a, r->start), hi = std::min(end, r->start + r->bytes);
        if (lo < hi) fill_chunks(*r, lo - r->start, hi - lo);
    }
}

std::vector<std::pair<std::size_t, std::size_t>> touched_ranges(const void* start) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    LazyRange* r = find_range(reinterpret_cast<uintptr_t>(start));
    if (!r || r->start != reinterpret_cast<uintptr_t>(start)) return out;
    for (std::size_t c = 0; c < r->chunks; ++c) {
        if (!r->filled[c].load(std::memory_order_acquire)) continue;
        const std::size_t lo = c << kChunkShift, hi = std::min(r->bytes, (c + 1) << kChunkShift);
        if (!out.empty() && out.back().second == lo) out.back().second = hi;
        else out.emplace_back(lo, hi);
    }
    return out;
}

std::vector<SampledLaunch> sampled_launches() {
    Sampling& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    return s.launches;
}

uint64_t sampled_bytes_written() { return state().written.load(std::memory_order_relaxed); }

void begin_sampled_launch() {
    Sampling& s = state();
    s.written.store(0, std::memory_order_relaxed);
    for (const auto& r : s.ranges)
        for (std::size_t i = 0; i < r->target_count; ++i) r->targets[i].hit.store(false, std::memory_order_relaxed);
}

void record_sampled_launch(uint64_t units, uint64_t run) {
    Sampling& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.launches.push_back(SampledLaunch{units, run});
}

std::vector<uint64_t> first_sample(uint64_t units, uint64_t seed, std::size_t& required) {
    std::vector<uint64_t> out;
    auto add = [&](uint64_t u) {
        if (u < units && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    };
    // Whatever it costs: the first, last and middle units, so the first, last and middle rows of
    // the usual mappings (a block per row or per few rows, or a grid walking the rows) are covered.
    add(0);
    add(units - 1);
    add(units / 2);
    required = out.size();
    // While the sample is cheap: their neighbours (the step between two units' rows), then units
    // drawn from the seed across the grid.
    add(1);
    add(units - 2);
    add(units / 2 + 1);
    ScheduleRng rng{mix64(seed ^ 0x5a3b1e5ull) ^ units};
    for (int i = 0; i < 6; ++i) add(rng.below(units));
    return out;
}

std::vector<uint64_t> units_for_missing_targets(uint64_t units, const std::vector<UnitWrites>& ran) {
    Sampling& s = state();
    std::vector<uint64_t> want;
    auto add = [&](uint64_t u) {
        if (u >= units || std::find(want.begin(), want.end(), u) != want.end()) return;
        for (const UnitWrites& w : ran)
            if (w.unit == u) return;
        want.push_back(u);
    };
    for (std::size_t index = 0; index < s.ranges.size(); ++index) {
        const LazyRange& r = *s.ranges[index];
        // The units that wrote into this range, by index, and the first row each wrote: the model
        // is that unit u's first row is base + u * step (a block per row or per few rows, or the
        // first row of a grid-stride loop), so row t belongs to unit ((t - base) / step) mod units.
        std::vector<std::pair<uint64_t, int64_t>> points;
        for (const UnitWrites& w : ran) {
            if (index >= w.bytes.size() || w.bytes[index] == 0) continue;
            const int64_t row = r.row_of ? r.row_of(w.lowest[index] - r.start) : -1;
            if (row >= 0) points.emplace_back(w.unit, row);
        }
        if (points.empty()) continue;  // an input only: nothing to write
        std::sort(points.begin(), points.end());
        bool affine = points.size() >= 2;
        int64_t step = 0, base = 0;
        if (affine) {
            const int64_t du = static_cast<int64_t>(points[1].first - points[0].first);
            const int64_t dr = points[1].second - points[0].second;
            affine = du > 0 && dr > 0 && dr % du == 0;
            if (affine) {
                step = dr / du;
                base = points[0].second - static_cast<int64_t>(points[0].first) * step;
                for (const auto& [u, row] : points) affine = affine && base + static_cast<int64_t>(u) * step == row;
            }
        }
        for (std::size_t i = 0; i < r.target_count; ++i) {
            const Target& t = r.targets[i];
            if (t.hit.load(std::memory_order_relaxed)) continue;
            if (affine) {
                if (t.row >= base) add(static_cast<uint64_t>((t.row - base) / step) % units);
            } else {
                // No model: a few more units drawn across the grid.
                ScheduleRng rng{mix64(s.seed ^ mix64(static_cast<uint64_t>(t.row))) ^ units};
                for (int j = 0; j < 4; ++j) add(rng.below(units));
            }
        }
    }
    return want;
}

}  // namespace emu
