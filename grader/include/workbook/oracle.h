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

}  // namespace workbook
