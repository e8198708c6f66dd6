/**
 * @file backward_oracle.h
 * @brief Lesson 10's fp64 oracle: the saved rstd, dx and dweight from the exact rounded inputs.
 *
 * The same functions run on the CPU (the oracle's tests, the failure reports) and inside the
 * grader's deliberately naive GPU kernels (one thread walks a whole row, or a whole column).
 */
#pragma once

#include <cmath>
#include <cstdint>

#include "workbook/hd.h"
#include "workbook/inputs.h"

namespace workbook {

/// One backward problem: the forward's x (and eps, which made the saved rstd), the weight, and
/// the incoming gradient dy.
struct BackwardProblem {
    int64_t rows = 0;
    int64_t cols = 0;
    double eps = 1e-5;  ///< the forward's eps: inside the saved rstd, never given to the call
    ValueSpec dy;
    ValueSpec x;
    ValueSpec weight;
};

/// The rstd the forward saved for `row`: 1 / sqrt(mean(x²) + eps) in fp64, stored as fp32.
/// The call reads exactly this fp32 value, and the oracle uses exactly it too.
template <typename T>
WB_HD inline float saved_rstd(const BackwardProblem& p, int64_t row) {
    double acc = 0.0;
    for (int64_t c = 0; c < p.cols; ++c) {
        const double v = input_value<T>(p.x, row, c, p.cols);
        acc += v * v;
    }
    return static_cast<float>(1.0 / sqrt(acc / static_cast<double>(p.cols) + p.eps));
}

/// What dx's row needs: the saved rstd, m = mean(g·x̂) and mean|g·x̂| (g = dy·w, x̂ = x·rstd),
/// the size an fp32 sum of the row's g·x̂ is accurate to.
struct BackwardRowStats {
    double rstd;
    double m;
    double mean_abs;
};

template <typename T>
WB_HD inline BackwardRowStats backward_row_stats(const BackwardProblem& p, int64_t row) {
    const double rstd = saved_rstd<T>(p, row);
    double sum = 0.0, sum_abs = 0.0;
    for (int64_t c = 0; c < p.cols; ++c) {
        const double g = static_cast<double>(input_value<T>(p.dy, row, c, p.cols)) *
                         static_cast<double>(input_value<T>(p.weight, 0, c, p.cols));
        const double t = g * static_cast<double>(input_value<T>(p.x, row, c, p.cols)) * rstd;
        sum += t;
        sum_abs += t < 0 ? -t : t;
    }
    const double n = static_cast<double>(p.cols);
    return {rstd, sum / n, sum_abs / n};
}

/// dx(row, col) = rstd · (g − x̂ · m).
template <typename T>
WB_HD inline double oracle_dx(const BackwardProblem& p, int64_t row, int64_t col, BackwardRowStats st) {
    const double g = static_cast<double>(input_value<T>(p.dy, row, col, p.cols)) *
                     static_cast<double>(input_value<T>(p.weight, 0, col, p.cols));
    const double xh = static_cast<double>(input_value<T>(p.x, row, col, p.cols)) * st.rstd;
    return st.rstd * (g - xh * st.m);
}

/// The size dx(row, col)'s fp32 error grows with: rstd · (|g| + |x̂| · mean|g·x̂|), the terms
/// before they cancel (g and x̂·m can be nearly equal, and then dx is small and its error is not).
template <typename T>
WB_HD inline double oracle_dx_scale(const BackwardProblem& p, int64_t row, int64_t col, BackwardRowStats st) {
    const double g = static_cast<double>(input_value<T>(p.dy, row, col, p.cols)) *
                     static_cast<double>(input_value<T>(p.weight, 0, col, p.cols));
    const double xh = static_cast<double>(input_value<T>(p.x, row, col, p.cols)) * st.rstd;
    return st.rstd * ((g < 0 ? -g : g) + (xh < 0 ? -xh : xh) * st.mean_abs);
}

/// dweight[col] = Σ_rows dy · x̂, and the root of the sum of the squared terms, √(Σ (dy·x̂)²),
/// the size an fp32 sum of these terms of random sign is accurate to (grad_weight_tolerance).
struct ColumnSum {
    double sum;
    double l2;
};

/// One column of dweight, walking every row; `rstd` holds each row's saved rstd.
template <typename T>
WB_HD inline ColumnSum oracle_dweight(const BackwardProblem& p, int64_t col, const float* rstd) {
    double sum = 0.0, squares = 0.0;
    for (int64_t r = 0; r < p.rows; ++r) {
        const double t = static_cast<double>(input_value<T>(p.dy, r, col, p.cols)) *
                         static_cast<double>(input_value<T>(p.x, r, col, p.cols)) * static_cast<double>(rstd[r]);
        sum += t;
        squares += t * t;
    }
    return {sum, sqrt(squares)};
}

}  // namespace workbook
