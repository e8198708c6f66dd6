// Lesson 10's oracle and tolerance, on the CPU. The oracle's dx and dweight are the true
// gradient of the forward (finite differences agree); grad_x_tolerance and grad_weight_tolerance
// admit honest fp32 kernels, in the orders kernels really add (one row after another, per-group
// partials, trees), at every size the grader uses, and reject the bugs the lesson names: a row
// sum or column partials kept in T, a lost update, an rstd the kernel works out itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "lessons/common/plan_helpers.h"
#include "workbook/backward_oracle.h"
#include "workbook/rmsnorm_backward.h"
#include "workbook/tolerance.h"

using namespace workbook;

namespace {

template <typename T>
float round_to(float v) {
    return Elem<T>::to_float(Elem<T>::from_float(v));
}

/// The grader's inputs for a case of `rows` × `cols` (lesson_backward.cu's normal values).
BackwardProblem problem(int64_t rows, int64_t cols, uint64_t seed = 42, InputKind x_kind = InputKind::normal,
                        double eps = 1e-5) {
    BackwardProblem p;
    p.rows = rows;
    p.cols = cols;
    p.eps = eps;
    p.x = input_spec(x_kind, seed, 0, rows);
    p.dy = input_spec(InputKind::normal, seed, 1, rows);
    p.weight = weight_spec(seed);
    return p;
}

// ---- the oracle is the gradient ------------------------------------------------------------

/// L = Σ dy · y with y = x · rstd(x) · w, rstd(x) = 1 / sqrt(mean(x²) + eps), all in fp64.
double forward_loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                    int64_t rows, int64_t cols, double eps) {
    double loss = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
        double sq = 0.0;
        for (int64_t c = 0; c < cols; ++c) sq += x[r * cols + c] * x[r * cols + c];
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
        for (int64_t c = 0; c < cols; ++c) loss += dy[r * cols + c] * x[r * cols + c] * rstd * w[c];
    }
    return loss;
}

TEST(BackwardOracle, IsTheGradientOfTheForward) {
    const BackwardProblem p = problem(5, 11, 7);
    std::vector<double> x(p.rows * p.cols), dy(p.rows * p.cols), w(p.cols);
    for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t c = 0; c < p.cols; ++c) {
            x[r * p.cols + c] = input_value<float>(p.x, r, c, p.cols);
            dy[r * p.cols + c] = input_value<float>(p.dy, r, c, p.cols);
        }
    for (int64_t c = 0; c < p.cols; ++c) w[c] = input_value<float>(p.weight, 0, c, p.cols);
    std::vector<float> rstd(p.rows);
    for (int64_t r = 0; r < p.rows; ++r) rstd[r] = saved_rstd<float>(p, r);

    // The saved rstd is rounded to fp32: agreement to a few fp32 ulps of the terms' size.
    for (int64_t r = 0; r < p.rows; ++r) {
        const BackwardRowStats st = backward_row_stats<float>(p, r);
        for (int64_t c = 0; c < p.cols; ++c) {
            const double h = 1e-6;
            std::vector<double> up = x, down = x;
            up[r * p.cols + c] += h;
            down[r * p.cols + c] -= h;
            const double numeric =
                (forward_loss(up, w, dy, p.rows, p.cols, p.eps) - forward_loss(down, w, dy, p.rows, p.cols, p.eps)) /
                (2 * h);
            EXPECT_NEAR(oracle_dx<float>(p, r, c, st), numeric, 1e-6 * (1.0 + oracle_dx_scale<float>(p, r, c, st)))
                << "dx at row " << r << ", col " << c;
        }
    }
    for (int64_t c = 0; c < p.cols; ++c) {
        const double h = 1e-6;
        std::vector<double> up = w, down = w;
        up[c] += h;
        down[c] -= h;
        const double numeric =
            (forward_loss(x, up, dy, p.rows, p.cols, p.eps) - forward_loss(x, down, dy, p.rows, p.cols, p.eps)) / (2 * h);
        const ColumnSum want = oracle_dweight<float>(p, c, rstd.data());
        EXPECT_NEAR(want.sum, numeric, 1e-6 * (1.0 + want.l2)) << "dweight at col " << c;
    }
}

TEST(BackwardOracle, SavedRstdIsTheForwardsRoundedToFp32) {
    const BackwardProblem p = problem(3, 4096, 9, InputKind::small, 1e-2);
    for (int64_t r = 0; r < p.rows; ++r) {
        double sq = 0.0;
        for (int64_t c = 0; c < p.cols; ++c) {
            const double v = input_value<__half>(p.x, r, c, p.cols);
            sq += v * v;
        }
        EXPECT_EQ(saved_rstd<__half>(p, r), static_cast<float>(1.0 / std::sqrt(sq / 4096.0 + 1e-2)));
        // eps = 1e-2 dominates values below 0.01: recomputing with another eps is far off.
        EXPECT_GT(1.0 / std::sqrt(sq / 4096.0 + 1e-6) / saved_rstd<__half>(p, r), 5.0);
    }
}

// ---- dweight: a column sum over every row --------------------------------------------------

enum class ColumnOrder {
    sequential,         ///< one thread adds every row of its column in order (the worst honest order)
    group_partials,     ///< 2112 row groups (264 blocks of 8 warps) each add their rows, then 8 slices, then 8
    partials_in_bf16,   ///< the same partials rounded to bf16 before they are added
    partials_in_fp16,   ///< rounded to fp16
    fp16_accumulator,   ///< a sequential sum rounded to fp16 after every add
    lost_update,        ///< the group partials, one of them lost (a racy read-modify-write)
};

/// Columns of dweight (out of p.cols) a kernel adding in `order` gets outside grad_weight_tolerance.
template <typename T>
int bad_columns(const BackwardProblem& p, ColumnOrder order) {
    std::vector<float> rstd(p.rows);
    for (int64_t r = 0; r < p.rows; ++r) rstd[r] = saved_rstd<T>(p, r);
    const Tolerance tol = grad_weight_tolerance(p.rows);
    const int64_t groups = 2112;
    int bad = 0;
    for (int64_t c = 0; c < p.cols; ++c) {
        std::vector<float> partial(groups, 0.0f);
        float seq = 0.0f;
        for (int64_t r = 0; r < p.rows; ++r) {
            const float xh = input_value<T>(p.x, r, c, p.cols) * rstd[r];
            const float t = input_value<T>(p.dy, r, c, p.cols) * xh;
            if (order == ColumnOrder::fp16_accumulator) seq = round_to<__half>(seq + t);
            else seq += t;
            partial[r % groups] += t;
        }
        float got = seq;
        if (order != ColumnOrder::sequential && order != ColumnOrder::fp16_accumulator) {
            if (order == ColumnOrder::lost_update) partial[groups / 2] = 0.0f;
            float slice[8] = {};
            for (int64_t g = 0; g < groups; ++g) {
                float v = partial[g];
                if (order == ColumnOrder::partials_in_bf16) v = round_to<__nv_bfloat16>(v);
                if (order == ColumnOrder::partials_in_fp16) v = round_to<__half>(v);
                slice[g % 8] += v;
            }
            got = slice[0];
            for (int s = 1; s < 8; ++s) got += slice[s];
        }
        const ColumnSum want = oracle_dweight<T>(p, c, rstd.data());
        bad += !within(want.sum, got, tol, want.l2);
    }
    return bad;
}

TEST(GradWeightTolerance, HonestFp32SumsPassAtEverySize) {
    for (int64_t rows : {1, 1000, 32768}) {
        const BackwardProblem p = problem(rows, 64);
        EXPECT_EQ(bad_columns<__nv_bfloat16>(p, ColumnOrder::sequential), 0) << rows << " rows";
        EXPECT_EQ(bad_columns<__nv_bfloat16>(p, ColumnOrder::group_partials), 0) << rows << " rows";
        EXPECT_EQ(bad_columns<float>(p, ColumnOrder::sequential), 0) << rows << " rows, f32";
    }
    // The column_sum cases' sizes: a million rows, one thread adding them in order.
    for (int64_t rows : {262147, 1048579}) {
        const BackwardProblem p = problem(rows, 8, 5);
        EXPECT_EQ(bad_columns<__half>(p, ColumnOrder::sequential), 0) << rows << " rows";
        EXPECT_EQ(bad_columns<__half>(p, ColumnOrder::group_partials), 0) << rows << " rows";
    }
}

TEST(GradWeightTolerance, SumsKeptInTFail) {
    const BackwardProblem p = problem(32768, 64);
    EXPECT_GT(bad_columns<__nv_bfloat16>(p, ColumnOrder::partials_in_bf16), 32);
    EXPECT_GT(bad_columns<__half>(p, ColumnOrder::partials_in_fp16), 16);
    EXPECT_GT(bad_columns<__half>(p, ColumnOrder::fp16_accumulator), 32);
    // Past a million rows the bf16 partials are still far off.
    EXPECT_GT(bad_columns<__nv_bfloat16>(problem(1048579, 8, 5), ColumnOrder::partials_in_bf16), 4);
}

TEST(GradWeightTolerance, ALostUpdateFails) {
    EXPECT_GT(bad_columns<float>(problem(32768, 64), ColumnOrder::lost_update), 60);
    EXPECT_GT(bad_columns<float>(problem(262147, 8, 5), ColumnOrder::lost_update), 6);
}

TEST(GradWeightTolerance, GrowsWithTheSquareRootOfTheRows) {
    EXPECT_DOUBLE_EQ(column_sum_ulps(1), 18.0);
    EXPECT_DOUBLE_EQ(column_sum_ulps(1 << 20), 16.0 + 2048.0);
    const Tolerance t = grad_weight_tolerance(32768);
    EXPECT_NEAR(t.scale_rel, (16.0 + 2.0 * std::sqrt(32768.0)) * std::ldexp(1.0, -23), 1e-15);
    EXPECT_GT(describe(t).find("sqrt(sum (dy*xhat)^2)"), 0u);
}

// ---- dx: a row sum, then one product per element -------------------------------------------

enum class RowVariant {
    fp32_tree,          ///< 128 threads add their elements in order, then pairwise: a kernel's order
    fp32_sequential,    ///< one thread adds the whole row in order
    fp16_accumulator,   ///< the row sum rounded to fp16 after every add
    recomputed_rstd,    ///< the kernel ignores the saved rstd and works it out from x with eps = 1e-6
};

/// Elements of dx (rounded to T) outside grad_x_tolerance for a kernel computing in `v`'s way.
template <typename T>
int bad_dx(const BackwardProblem& p, DType t, RowVariant v) {
    const Tolerance tol = grad_x_tolerance(t, p.cols);
    int bad = 0;
    for (int64_t r = 0; r < p.rows; ++r) {
        float rstd = saved_rstd<T>(p, r);
        if (v == RowVariant::recomputed_rstd) {
            float sq = 0.0f;
            for (int64_t c = 0; c < p.cols; ++c) {
                const float xv = input_value<T>(p.x, r, c, p.cols);
                sq += xv * xv;
            }
            rstd = 1.0f / std::sqrt(sq / static_cast<float>(p.cols) + 1e-6f);
        }
        std::vector<float> g(p.cols), xh(p.cols);
        std::vector<float> part(128, 0.0f);
        float seq = 0.0f;
        for (int64_t c = 0; c < p.cols; ++c) {
            g[c] = input_value<T>(p.dy, r, c, p.cols) * input_value<T>(p.weight, 0, c, p.cols);
            xh[c] = input_value<T>(p.x, r, c, p.cols) * rstd;
            const float term = g[c] * xh[c];
            part[c % 128] += term;
            seq = v == RowVariant::fp16_accumulator ? round_to<__half>(seq + term) : seq + term;
        }
        float sum = seq;
        if (v == RowVariant::fp32_tree || v == RowVariant::recomputed_rstd) {
            for (size_t width = 64; width > 0; width /= 2)
                for (size_t i = 0; i < width; ++i) part[i] += part[i + width];
            sum = part[0];
        }
        const float m = sum / static_cast<float>(p.cols);
        const BackwardRowStats st = backward_row_stats<T>(p, r);
        for (int64_t c = 0; c < p.cols; ++c) {
            const float got = round_to<T>(rstd * (g[c] - xh[c] * m));
            bad += !within(oracle_dx<T>(p, r, c, st), got, tol, oracle_dx_scale<T>(p, r, c, st));
        }
    }
    return bad;
}

TEST(GradXTolerance, HonestFp32KernelsPass) {
    for (int64_t cols : {1, 19, 1001, 4096, 65536}) {
        const BackwardProblem p = problem(cols >= 4096 ? 8 : 64, cols);
        EXPECT_EQ(bad_dx<float>(p, DType::f32, RowVariant::fp32_tree), 0) << cols;
        EXPECT_EQ(bad_dx<float>(p, DType::f32, RowVariant::fp32_sequential), 0) << cols;
        EXPECT_EQ(bad_dx<__half>(p, DType::f16, RowVariant::fp32_sequential), 0) << cols;
        EXPECT_EQ(bad_dx<__nv_bfloat16>(p, DType::bf16, RowVariant::fp32_tree), 0) << cols;
    }
    // Zero rows of x (rstd = 1/sqrt(eps)), and the saved rstd with a large eps.
    EXPECT_EQ(bad_dx<__half>(problem(64, 1024, 3, InputKind::zero_rows), DType::f16, RowVariant::fp32_tree), 0);
    EXPECT_EQ(bad_dx<float>(problem(64, 2048, 3, InputKind::small, 1e-2), DType::f32, RowVariant::fp32_tree), 0);
}

TEST(GradXTolerance, AnFp16RowSumFails) {
    EXPECT_GT(bad_dx<__half>(problem(8, 4096), DType::f16, RowVariant::fp16_accumulator), 100);
}

TEST(GradXTolerance, AnRstdTheKernelWorksOutItselfFails) {
    // The lesson's saved_rstd_large_eps case: x below 0.01, saved with eps = 1e-2.
    const BackwardProblem p = problem(16, 2048, 3, InputKind::small, 1e-2);
    EXPECT_GT(bad_dx<float>(p, DType::f32, RowVariant::recomputed_rstd), 16 * 2048 / 2);
    EXPECT_GT(bad_dx<__nv_bfloat16>(p, DType::bf16, RowVariant::recomputed_rstd), 16 * 2048 / 2);
}

TEST(BackwardContract, LimitsAreTheLessonsOwn) {
    EXPECT_EQ(lesson10::kMaxCols, 65536);
    const Tolerance t = grad_x_tolerance(DType::bf16, 4096);
    EXPECT_DOUBLE_EQ(t.rel, 2.0 * dtype_ulp(DType::bf16));
    EXPECT_DOUBLE_EQ(t.scale_rel, accumulation_ulps(4096) * dtype_ulp(DType::f32));
}

}  // namespace
