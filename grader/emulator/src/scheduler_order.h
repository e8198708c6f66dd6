/// @file scheduler_order.h
/// @brief The order the scheduler runs things in: the units of a launch and the warps of a unit,
///        drawn from the grade's seed and a launch counter, so a run is reproducible.
#pragma once

#include <cstdint>


namespace emu {

/// One step of SplitMix64: a well-mixed 64-bit value from any input.
inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// A small generator for scheduling choices (never for anything a grade's values depend on).
struct ScheduleRng {
    uint64_t state = 0;
    uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ull); }
    /// A value in [0, n); n > 0.
    uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
};

/// The order one launch takes its `n` units in: the bijection i -> (a * i + b) mod n, walked
/// backwards when `backwards` is set.
struct UnitOrder {
    uint64_t n = 1, a = 1, b = 0;
    bool backwards = false;
    uint64_t at(uint64_t i) const {
        if (backwards) i = n - 1 - i;
        return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * i + b) % n);
    }
};

/// The order of this launch of `kernel` over `units` units, and (in `seed`) the seed its units'
/// schedules are drawn from. A kernel's launches come in pairs: the first of a pair takes a
/// bijection drawn from the grade's seed and the launch counter, the second the same one walked
/// backwards, so two consecutive launches on the same inputs never add in the same order.
/// `again`: the same launch starting over with other dimensions (a kernel declared with
/// __cluster_dims__), which does not count as another launch.
UnitOrder next_unit_order(const void* kernel, uint64_t units, uint64_t& seed, bool again = false);

}  // namespace emu

