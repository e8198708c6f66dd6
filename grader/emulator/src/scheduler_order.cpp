/// @file scheduler_order.cpp
/// @brief The orders of units and warps: seeded by the grader (emu::set_schedule_seed) and a
///        launch counter, so the same grade with the same seed schedules the same way.
#include "scheduler_order.h"

#include <mutex>
#include <numeric>
#include <unordered_map>

#include "emu/control.h"

namespace emu {
namespace {

struct KernelHistory {
    uint64_t launches = 0;
    UnitOrder last;  ///< the order of the kernel's last launch that began a pair
    UnitOrder before;  ///< `last` before the latest launch (put back when that launch starts over)
};

std::mutex g_mu;
uint64_t g_seed = 0x5eed0fe3a1a7e5ull;
uint64_t g_launches = 0;
std::unordered_map<const void*, KernelHistory> g_kernels;

/// A multiplier in [1, n) coprime to n (1 when n < 3: the only bijections are the identity and
/// its reverse).
uint64_t coprime_below(uint64_t n, ScheduleRng& rng) {
    if (n < 3) return 1;
    for (int tries = 0; tries < 64; ++tries) {
        const uint64_t a = 1 + rng.below(n - 1);
        if (std::gcd(a, n) == 1) return a;
    }
    return 1;
}

}  // namespace

void set_schedule_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_seed = seed;
    g_launches = 0;
    g_kernels.clear();
}

UnitOrder next_unit_order(const void* kernel, uint64_t units, uint64_t& seed, bool again) {
    std::lock_guard<std::mutex> lock(g_mu);
    KernelHistory& h = g_kernels[kernel];
    if (again && h.launches > 0 && g_launches > 0) {
        --h.launches;
        --g_launches;
        h.last = h.before;
    }
    h.before = h.last;
    const uint64_t launch = g_launches++;
    seed = mix64(g_seed ^ mix64(launch + 1));
    const uint64_t nth = h.launches++;
    if (nth % 2 == 1 && h.last.n == units) {
        UnitOrder o = h.last;
        o.backwards = true;
        return o;
    }
    ScheduleRng rng{seed};
    UnitOrder o;
    o.n = units ? units : 1;
    o.a = coprime_below(o.n, rng);
    o.b = rng.below(o.n);
    h.last = o;
    return o;
}

}  // namespace emu
