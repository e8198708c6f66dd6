// The tolerance must admit honest fp32 arithmetic at every row length and reject an fp16 accumulator.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <cuda_fp16.h>

#include "workbook/tolerance.h"

using namespace workbook;

namespace {

/// Largest relative error, over `rows` random rows, of y = x * inv_rms where the sum of squares
/// is accumulated sequentially in Acc (float or __half).
template <typename Acc>
double worst_relative_error(int64_t cols, int rows) {
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    double worst = 0;
    std::vector<float> x(cols);
    for (int r = 0; r < rows; ++r) {
        for (float& v : x) v = dist(rng);
        Acc acc = Acc(0.0f);
        double exact = 0;
        for (float v : x) {
            acc = Acc(float(acc) + v * v);
            exact += double(v) * v;
        }
        const float inv = 1.0f / std::sqrt(float(acc) / float(cols) + 1e-5f);
        const double inv_exact = 1.0 / std::sqrt(exact / cols + 1e-5);
        for (float v : x) {
            const double expected = v * inv_exact;
            const double got = v * inv;
            if (expected != 0) worst = std::max(worst, std::fabs(got - expected) / std::fabs(expected));
        }
    }
    return worst;
}

}  // namespace

TEST(Tolerance, SequentialFp32LoopPassesAtEveryRowLength) {
    for (int64_t cols : {32, 4096, 65536, 262144}) {
        const double err = worst_relative_error<float>(cols, 4);
        EXPECT_LT(err, output_tolerance(DType::f32, cols).rel) << "cols " << cols;
    }
}

TEST(Tolerance, Fp16AccumulatorFails) {
    for (int64_t cols : {64, 1024, 4096}) {
        const double err = worst_relative_error<__half>(cols, 2);
        EXPECT_GT(err, output_tolerance(DType::f32, cols).rel) << "cols " << cols;
        // For fp16 outputs a short fp16 sum can hide inside the output's own rounding; from a
        // thousand terms on it cannot (and fp16_huge_values catches its overflow at any length).
        if (cols >= 1024) EXPECT_GT(err, output_tolerance(DType::f16, cols).rel) << "cols " << cols;
    }
}

TEST(Tolerance, GrowsWithCols) {
    EXPECT_LT(output_tolerance(DType::f32, 1024).rel, output_tolerance(DType::f32, 65536).rel);
    EXPECT_LT(output_tolerance(DType::f32, 65536).rel, output_tolerance(DType::f32, 262144).rel);
}

TEST(Tolerance, SixteenBitOutputsGetAFewUnitsInTheLastPlace) {
    const double f16 = output_tolerance(DType::f16, 128).rel;
    EXPECT_GT(f16, 1.5 * dtype_ulp(DType::f16));
    EXPECT_LT(f16, 4.0 * dtype_ulp(DType::f16));
    const double bf16 = output_tolerance(DType::bf16, 128).rel;
    EXPECT_GT(bf16, 1.5 * dtype_ulp(DType::bf16));
    EXPECT_LT(bf16, 4.0 * dtype_ulp(DType::bf16));
}

TEST(Tolerance, WithinHandlesNanAndInfinity) {
    const Tolerance t = output_tolerance(DType::f32, 128);
    const double nan = std::nan("");
    EXPECT_TRUE(within(nan, nan, t));
    EXPECT_FALSE(within(nan, 1.0, t));
    EXPECT_FALSE(within(1.0, nan, t));  // a poisoned (unwritten) output never passes
    EXPECT_TRUE(within(INFINITY, INFINITY, t));
    EXPECT_FALSE(within(INFINITY, 1e30, t));
    EXPECT_TRUE(within(0.0, 0.0, t));
    EXPECT_FALSE(within(0.0, 1e-3, t));
    EXPECT_TRUE(within(1.0, 1.0 + 0.5 * t.rel, t));
    EXPECT_FALSE(within(1.0, 1.0 + 2.0 * t.rel, t));
}

TEST(Tolerance, RoundedSumIsOneUnitInTheLastPlace) {
    EXPECT_DOUBLE_EQ(rounded_sum_tolerance(DType::bf16).rel, dtype_ulp(DType::bf16));
    EXPECT_DOUBLE_EQ(rounded_sum_tolerance(DType::f32).rel, dtype_ulp(DType::f32));
}
