/**
 * @file gate.h
 * @brief The benchmark gate's arithmetic: medians, the noise band and the verdict.
 */
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace workbook {

/// Median of the samples (the mean of the middle two for an even count); 0 for none.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// GB/s (10^9 bytes per second) of moving `bytes` in `seconds`.
inline double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }

/// Relative noise of a measurement, from two independent series of the same kernel:
/// |1 - median(a) / median(b)|, never below `floor` (timing jitter the two series may share).
inline double noise_band(const std::vector<double>& a, const std::vector<double>& b, double floor = 0.01) {
    const double ma = median(a), mb = median(b);
    if (ma <= 0 || mb <= 0) return floor;
    return std::max(floor, std::fabs(1.0 - ma / mb));
}

/// One shape's gate verdict.
enum class GateVerdict { pass, slow, impossible };

/// A student at `ratio` of the reference passes at `fraction`, or within the noise band of it.
/// A result above 1.05 x the device copy bandwidth cannot be true and is rejected.
inline GateVerdict gate_verdict(double student_gbps, double reference_gbps, double copy_gbps, double fraction,
                                double noise) {
    if (copy_gbps > 0 && student_gbps > 1.05 * copy_gbps) return GateVerdict::impossible;
    if (reference_gbps <= 0) return GateVerdict::slow;
    const double ratio = student_gbps / reference_gbps;
    return ratio >= fraction * (1.0 - noise) ? GateVerdict::pass : GateVerdict::slow;
}

inline const char* to_string(GateVerdict v) {
    switch (v) {
        case GateVerdict::pass: return "pass";
        case GateVerdict::slow: return "slow";
        case GateVerdict::impossible: return "impossible";
    }
    return "?";
}

}  // namespace workbook
