/**
 * @file oracle.h
 * @brief The fp64 oracle: what every output element should be, from the exact rounded inputs.
 *
 * The same functions run on the CPU (lesson 1, failure reports, the oracle's own tests)
 * and inside the grader's deliberately naive GPU kernel (one thread per row, fp64).
 */
#pragma once

#include <cmath>
#include <cstdint>

#include "workbook/e4m3.h"
#include "workbook/hd.h"
#include "workbook/inputs.h"

namespace workbook {

/// One row-normalisation problem: s = x (+ residual), y = s / sqrt(mean(s^2) + eps) * weight.
/// Lesson 9 adds LayerNorm (mean subtracted first), a bias, and weight or bias stored in fp32
/// while the activations are 16-bit.
struct OracleProblem {
    int64_t rows = 0;
    int64_t cols = 0;
    double eps = 1e-6;
    ValueSpec x;
    ValueSpec weight;
    bool has_residual = false;
    ValueSpec residual;
    bool layer_norm = false;  ///< y = (s - mean(s)) / sqrt(var(s) + eps) * weight (+ bias)
    bool has_bias = false;
    ValueSpec bias;
    bool weight_f32 = false;  ///< the weight is stored as fp32, not as T
    bool bias_f32 = false;    ///< the bias is stored as fp32, not as T
};

/// A row's statistics: its mean (0 for RMSNorm), 1 / sqrt(var + eps) (the rstd output), and
/// for LayerNorm the mean of |s|, the size an fp32 sum of the row's elements is accurate to.
struct RowStats {
    double mean;
    double rstd;
    double mean_abs = 0.0;
};

/// The exact pre-norm value s(row, col) in fp64, from inputs rounded to T.
template <typename T>
WB_HD inline double oracle_sum_input(const OracleProblem& p, int64_t row, int64_t col) {
    double s = input_value<T>(p.x, row, col, p.cols);
    if (p.has_residual) s += input_value<T>(p.residual, row, col, p.cols);
    return s;
}

/// The row's mean and 1 / sqrt(mean((s - mean)^2) + eps), two passes in fp64; mean = 0 for RMSNorm.
template <typename T>
WB_HD inline RowStats oracle_row_stats(const OracleProblem& p, int64_t row) {
    double mean = 0.0, mean_abs = 0.0;
    if (p.layer_norm) {
        for (int64_t c = 0; c < p.cols; ++c) {
            const double s = oracle_sum_input<T>(p, row, c);
            mean += s;
            mean_abs += s < 0 ? -s : s;
        }
        mean /= static_cast<double>(p.cols);
        mean_abs /= static_cast<double>(p.cols);
    }
    double acc = 0.0;
    for (int64_t c = 0; c < p.cols; ++c) {
        const double d = oracle_sum_input<T>(p, row, c) - mean;
        acc += d * d;
    }
    return {mean, 1.0 / sqrt(acc / static_cast<double>(p.cols) + p.eps), mean_abs};
}

/// 1 / sqrt(mean(s^2) + eps) of one row, accumulated in fp64 (the rstd of oracle_row_stats).
template <typename T>
WB_HD inline double oracle_inv_rms(const OracleProblem& p, int64_t row) {
    return oracle_row_stats<T>(p, row).rstd;
}

/// The weight (or bias) element as stored: in T, or in fp32 when the problem says so.
template <typename T>
WB_HD inline double oracle_param(const ValueSpec& s, bool stored_f32, int64_t col, int64_t cols) {
    return stored_f32 ? input_value<float>(s, 0, col, cols) : input_value<T>(s, 0, col, cols);
}

/// The expected normalised output y(row, col), given the row's oracle_inv_rms.
template <typename T>
WB_HD inline double oracle_output(const OracleProblem& p, int64_t row, int64_t col, double inv_rms) {
    return oracle_sum_input<T>(p, row, col) * inv_rms * static_cast<double>(input_value<T>(p.weight, 0, col, p.cols));
}

/// The expected y(row, col) of any problem: (s - mean) * rstd * weight (+ bias).
template <typename T>
WB_HD inline double oracle_output(const OracleProblem& p, int64_t row, int64_t col, RowStats st) {
    const double w = oracle_param<T>(p.weight, p.weight_f32, col, p.cols);
    const double b = p.has_bias ? oracle_param<T>(p.bias, p.bias_f32, col, p.cols) : 0.0;
    return (oracle_sum_input<T>(p, row, col) - st.mean) * st.rstd * w + b;
}

/// The magnitude the accumulation error of y(row, col) scales with:
/// (|s| + mean(|s|)) * rstd * |weight| + |bias|, the size of the terms before they cancel. For
/// RMSNorm without a bias it is |y| itself. For LayerNorm an honest fp32 mean is off by a few
/// ulps of the row's magnitudes, mean(|s|), whatever |s - mean| is: where the mean is large beside
/// the spread, and where s is close to the mean, that error dominates. With a bias the scale does
/// not vanish where x̂ · w and the bias cancel.
template <typename T>
WB_HD inline double oracle_output_scale(const OracleProblem& p, int64_t row, int64_t col, RowStats st) {
    const double w = oracle_param<T>(p.weight, p.weight_f32, col, p.cols);
    const double b = p.has_bias ? oracle_param<T>(p.bias, p.bias_f32, col, p.cols) : 0.0;
    const double s = oracle_sum_input<T>(p, row, col);
    const double terms = ((s < 0 ? -s : s) + st.mean_abs) * st.rstd * (w < 0 ? -w : w);
    return terms + (b < 0 ? -b : b);
}

/// Lesson 11's row: what its scale and its q are computed from.
struct Fp8RowOracle {
    double rstd;
    double amax;       ///< min(max|y|, clip): the amax the scale represents; NaN when y holds a NaN
    double scale;      ///< amax / 448
    double raw_amax;   ///< max|y| before the clip
    double pre_weight_amax;  ///< max|s · rstd|, the amax of the row before the weight (for diagnoses)
};

/// The row's rstd, max|y| (NaN-propagating: a NaN anywhere in y makes it NaN), the clipped amax and
/// the scale, in fp64 from the rounded inputs. `clip` may be +infinity.
template <typename T>
WB_HD inline Fp8RowOracle oracle_fp8_row(const OracleProblem& p, int64_t row, double clip) {
    Fp8RowOracle o{};
    o.rstd = oracle_row_stats<T>(p, row).rstd;
    double amax = 0.0, pre = 0.0;
    for (int64_t c = 0; c < p.cols; ++c) {
        const double y = oracle_output<T>(p, row, c, o.rstd);
        const double a = y < 0 ? -y : y;
        const double s = oracle_sum_input<T>(p, row, c) * o.rstd;
        const double b = s < 0 ? -s : s;
        if (a != a || amax != amax) amax = NAN;
        else if (a > amax) amax = a;
        if (b > pre) pre = b;
    }
    o.raw_amax = amax;
    o.amax = amax > clip ? clip : amax;  // NaN stays NaN
    o.scale = o.amax / kE4m3Max;
    o.pre_weight_amax = pre;
    return o;
}

/// The exact quotient y / scale that lesson 11 rounds to e4m3 (beyond ±448 where the clip
/// saturates); 0 for an all-zero row.
template <typename T>
WB_HD inline double oracle_fp8_quotient(const OracleProblem& p, int64_t row, int64_t col, const Fp8RowOracle& o) {
    if (o.amax == 0.0) return 0.0;
    return kE4m3Max * oracle_output<T>(p, row, col, o.rstd) / o.amax;
}

}  // namespace workbook
