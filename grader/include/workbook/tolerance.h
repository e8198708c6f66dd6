/**
 * @file tolerance.h
 * @brief How far a submission's output may be from the fp64 oracle. Written once, used everywhere.
 *
 * Two sources of honest error are allowed for:
 *  - rounding of the output to T (and of intermediate products): a couple of units in
 *    the last place of T for 16-bit outputs;
 *  - drift of the fp32 sum of squares, which grows with cols. A sequential fp32 loop is
 *    about 17 ulp off at 4096 cols, 120 at 65536 and 550 at 262144; tree reductions stay
 *    under about 8. The allowance (16 + cols / 64) fp32 ulps is above the sequential
 *    loop everywhere and far below what an fp16 accumulator produces (its relative error
 *    reaches 1e-3 within a few dozen terms).
 */
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "workbook/dtype.h"
#include "workbook/hd.h"

namespace workbook {

/// |got - expected| <= abs + rel * |expected|.
struct Tolerance {
    double rel;
    double abs;
};

/// fp32 ulps allowed for the drift of an fp32 sum of `cols` squares.
inline double accumulation_ulps(int64_t cols) { return 16.0 + static_cast<double>(cols) / 64.0; }

/// Tolerance of a normalised output y of type `t` for rows of `cols` elements.
/// `extra_ulps` widens the rounding term (lesson 5 may normalise the rounded residual_out).
inline Tolerance output_tolerance(DType t, int64_t cols, int extra_ulps = 0) {
    const double rounding_ulps = 2.0 + extra_ulps;
    const double rel = rounding_ulps * dtype_ulp(t) + accumulation_ulps(cols) * dtype_ulp(DType::f32);
    // Outputs in fp16's subnormal range carry absolute, not relative, rounding error.
    const double abs = t == DType::f16 ? std::ldexp(1.0, -23) : 1e-30;
    return {rel, abs};
}

/// Tolerance of a rounded sum such as lesson 5's residual_out: one unit in the last place of T.
inline Tolerance rounded_sum_tolerance(DType t) {
    return {dtype_ulp(t), t == DType::f16 ? std::ldexp(1.0, -24) : 1e-30};
}

/// True when `got` is acceptable. A NaN expected (a NaN in the row's input) requires a NaN.
WB_HD inline bool within(double expected, double got, Tolerance tol) {
    if (expected != expected) return got != got;
    if (got != got) return false;
    const double diff = got > expected ? got - expected : expected - got;
    const double mag = expected < 0 ? -expected : expected;
    if (mag > 1.7e308) return got == expected;  // an infinite expectation needs the same infinity
    return diff <= tol.abs + tol.rel * mag;
}

/// "rel 1.2e-06 + abs 1e-30", for failure messages.
inline std::string describe(Tolerance tol) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "rel %.3g + abs %.3g", tol.rel, tol.abs);
    return buf;
}

}  // namespace workbook
