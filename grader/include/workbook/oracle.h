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
struct OracleProblem {
    int64_t rows = 0;
    int64_t cols = 0;
    double eps = 1e-6;
    ValueSpec x;
    ValueSpec weight;
    bool has_residual = false;
    ValueSpec residual;
};

/// The exact pre-norm value s(row, col) in fp64, from inputs rounded to T.
template <typename T>
WB_HD inline double oracle_sum_input(const OracleProblem& p, int64_t row, int64_t col) {
    double s = input_value<T>(p.x, row, col, p.cols);
    if (p.has_residual) s += input_value<T>(p.residual, row, col, p.cols);
    return s;
}

/// 1 / sqrt(mean(s^2) + eps) of one row, accumulated in fp64.
template <typename T>
WB_HD inline double oracle_inv_rms(const OracleProblem& p, int64_t row) {
    double acc = 0.0;
    for (int64_t c = 0; c < p.cols; ++c) {
        const double s = oracle_sum_input<T>(p, row, c);
        acc += s * s;
    }
    return 1.0 / sqrt(acc / static_cast<double>(p.cols) + p.eps);
}

/// The expected normalised output y(row, col), given the row's oracle_inv_rms.
template <typename T>
WB_HD inline double oracle_output(const OracleProblem& p, int64_t row, int64_t col, double inv_rms) {
    return oracle_sum_input<T>(p, row, col) * inv_rms * static_cast<double>(input_value<T>(p.weight, 0, col, p.cols));
}

}  // namespace workbook
