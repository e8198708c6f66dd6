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
#include "workbook/e4m3.h"
#include "workbook/hd.h"

namespace workbook {

/// |got - expected| <= abs + rel * |expected| + scale_rel * scale, where `scale` is what the
/// accumulation error grows with (lesson 9: |s * rstd * w| + |b|; 0 elsewhere).
struct Tolerance {
    double rel;
    double abs;
    double scale_rel = 0.0;
    const char* scale_of = "";  ///< what `scale` is, for messages
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

/**
 * Tolerance of lesson 9's y, which may carry a bias and subtract a mean. The two error sources
 * are kept apart: the output's rounding, 2 ulp(T) of |y|; and the fp32 arithmetic (mean,
 * variance, x̂ · w + b), accumulation_ulps(cols) fp32 ulps of (|s| + mean|s|) · rstd · |w| + |b|,
 * the size of the terms before they cancel (mean|s|: the row's mean magnitude, LayerNorm only).
 * For RMSNorm without a bias that scale is |y| and the rule is output_tolerance's. An honest
 * fp32 mean is off by a few ulps of mean|s|: about 1e-4 for values near 1000, which the scale
 * term admits; a mean rounded to bf16 is off by up to 4, which it does not.
 * `rounded_sum_ulps`: ulps of T at the same scale, for a y normalised from the rounded
 * residual_out (the contract allows it).
 */
inline Tolerance norm_output_tolerance(DType t, int64_t cols, int rounded_sum_ulps = 0) {
    const double abs = t == DType::f16 ? std::ldexp(1.0, -23) : 1e-30;
    return {2.0 * dtype_ulp(t), abs, accumulation_ulps(cols) * dtype_ulp(DType::f32) + rounded_sum_ulps * dtype_ulp(t),
            "(|s|+mean|s|)*rstd*|w| + |b|"};
}

/// Tolerance of lesson 9's rstd (stored in fp32): the fp32 reduction's drift plus two ulps,
/// `rounded_sum_ulps` units of T when the rows may be normalised from the rounded residual_out,
/// and, through the scale rstd · (mean|s| · rstd)², the second-order effect of an fp32 mean's own
/// error on the variance about it (visible at mean/spread near 1000; 0 for RMSNorm).
inline Tolerance rstd_tolerance(DType t, int64_t cols, int rounded_sum_ulps = 0) {
    const double drift = accumulation_ulps(cols) * dtype_ulp(DType::f32);
    return {2.0 * dtype_ulp(DType::f32) + drift + rounded_sum_ulps * dtype_ulp(t), 1e-30, drift * drift,
            "rstd*(mean|s|*rstd)^2"};
}

/// The scale of an rstd for rstd_tolerance: rstd · (mean|s| · rstd)².
WB_HD inline double rstd_scale(double mean_abs, double rstd) {
    const double m = mean_abs * rstd;
    return (rstd < 0 ? -rstd : rstd) * m * m;
}

/**
 * Tolerance of lesson 10's dx, stored in T. dx = rstd · (g − x̂ · m) with g = dy · w, x̂ = x · rstd
 * and m = mean(g · x̂), a row sum like the forward's. The two error sources are kept apart, as in
 * norm_output_tolerance: 2 ulp(T) of |dx| for the output's rounding, and accumulation_ulps(cols)
 * fp32 ulps of rstd · (|g| + |x̂| · mean|g · x̂|), the size of the terms before they cancel (where
 * g and x̂ · m nearly cancel, dx is small and its fp32 error is not). An fp16 accumulator for m
 * is off by about 2⁻¹¹ of its partial sums, hundreds of times the allowance at 4096 columns.
 */
inline Tolerance grad_x_tolerance(DType t, int64_t cols) {
    const double abs = t == DType::f16 ? std::ldexp(1.0, -23) : 1e-30;
    return {2.0 * dtype_ulp(t), abs, accumulation_ulps(cols) * dtype_ulp(DType::f32), "rstd*(|dy*w|+|xhat|*mean|dy*w*xhat|)"};
}

/// fp32 ulps of √(Σ t²) allowed for a column sum of `rows` terms t of random sign.
inline double column_sum_ulps(int64_t rows) { return 16.0 + 2.0 * std::sqrt(static_cast<double>(rows)); }

/**
 * Tolerance of lesson 10's dweight (fp32): Σ over `rows` rows of t = dy · x̂. The terms have random
 * signs, so the partial sums of any order stay near √k · σ and the natural yardstick is
 * √(Σ t²), not |dweight| (which can be near 0) or Σ|t| (which grows like rows, not √rows).
 * Added one row after another, an fp32 sum is off by up to about √rows ulps of √(Σ t²) (it reaches
 * 0.85 √rows at 32768 rows and 0.3 √rows at 4 M); a tree or per-block partials stay within a few
 * ulps. The allowance, 16 + 2√rows ulps of √(Σ t²) plus 2 ulps of |dweight|, admits both at every
 * size. Partials rounded to bf16 before they are added are off by about 10⁴ ulps of √(Σ t²)
 * whatever the size, rounded to fp16 by about 10³: both fail at the grader's sizes (fp16 up to
 * about 10⁵ rows, bf16 to millions), and a lost update (a race) is off by a whole term.
 */
inline Tolerance grad_weight_tolerance(int64_t rows) {
    return {2.0 * dtype_ulp(DType::f32), 1e-30, column_sum_ulps(rows) * dtype_ulp(DType::f32), "sqrt(sum (dy*xhat)^2)"};
}

/**
 * Lesson 11: y quantised per row to FP8 e4m3. A kernel writes scale = min(max|y|, clip) / 448 in
 * fp32 and q = e4m3(y / scale), rounded to nearest (ties to even) and saturated to ±448.
 *
 * The scale: relative to the oracle's, fp8_scale_rel(cols), the fp32 drift of the row's sum of
 * squares (accumulation_ulps, the rule of every lesson) plus 4 ulps for the rstd, the product
 * that gives the amax and the division by 448. Exactly 0 for an all-zero row.
 *
 * q: the oracle's exact quotient u = 448 · y / min(max|y|, clip), in fp64, rounded to e4m3. An
 * honest kernel's quotient is off u by its scale's rounding and y's own, at most
 * fp8_quotient_rel(cols) relative, so where u lies that close to a rounding boundary (the midpoint
 * of two e4m3 neighbours) the kernel can land on either side of it. The rule: q is e4m3(u), or the
 * neighbour across that boundary, and the latter only there: exactly one e4m3 step, only where the
 * scale's own rounding can move an element across a boundary. Everywhere else q is exactly e4m3(u):
 * a step away from a boundary, two steps, a NaN, or a value past ±448 is wrong.
 *
 * The accepted set is {e4m3(u·(1 − ε)), e4m3(u·(1 + ε))}: rounding is monotone, and the interval
 * is far narrower than one e4m3 step (ε is 2e-5 at 4096 columns and 2.5e-4 at 65536, a step at
 * least 2^-4 of the value), so it holds one value, or two neighbours when a boundary falls inside.
 */
inline double fp8_scale_rel(int64_t cols) { return (4.0 + accumulation_ulps(cols)) * dtype_ulp(DType::f32); }

/// ε of the rule above: the scale's relative error and y's, which carries the same drift.
inline double fp8_quotient_rel(int64_t cols) { return 2.0 * fp8_scale_rel(cols); }

/// True when `got` (an e4m3 value) is an acceptable quantisation of the exact quotient `u` (finite,
/// possibly beyond ±448 where the clip saturates it), by the rule above with ε = `rel`.
WB_HD inline bool fp8_accepts(double u, double got, double rel) {
    if (got != got) return false;
    const double lo = e4m3_round(u - rel * (u < 0 ? -u : u));
    const double hi = e4m3_round(u + rel * (u < 0 ? -u : u));
    return got == lo || got == hi;
}

/// True when a row's `got` scale is within fp8_scale_rel (`rel`) of the oracle's `expected`
/// (exactly 0 for an all-zero row).
WB_HD inline bool fp8_scale_accepts(double expected, double got, double rel) {
    if (got != got) return false;
    const double diff = got > expected ? got - expected : expected - got;
    return diff <= rel * expected;
}

/// True when `got` is acceptable. A NaN expected (a NaN in the row's input) requires a NaN.
/// `scale` is the size of the terms y was computed from (lesson 9), 0 where unused.
WB_HD inline bool within(double expected, double got, Tolerance tol, double scale = 0.0) {
    if (expected != expected) return got != got;
    if (got != got) return false;
    const double diff = got > expected ? got - expected : expected - got;
    const double mag = expected < 0 ? -expected : expected;
    if (mag > 1.7e308) return got == expected;  // an infinite expectation needs the same infinity
    return diff <= tol.abs + tol.rel * mag + tol.scale_rel * scale;
}

/// "rel 1.2e-06 + abs 1e-30" (and the scale term, lesson 9), for failure messages.
inline std::string describe(Tolerance tol) {
    char buf[128];
    if (tol.scale_rel > 0)
        std::snprintf(buf, sizeof buf, "rel %.3g + abs %.3g + %.3g of %s", tol.rel, tol.abs, tol.scale_rel,
                      tol.scale_of);
    else
        std::snprintf(buf, sizeof buf, "rel %.3g + abs %.3g", tol.rel, tol.abs);
    return buf;
}

}  // namespace workbook
