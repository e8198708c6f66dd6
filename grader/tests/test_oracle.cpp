// The fp64 oracle against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "workbook/oracle.h"

using namespace workbook;

namespace {
/// A problem whose x and weight are constant: magnitude `v` with the generator's random sign.
OracleProblem constant_problem(float v, float w, int64_t cols, double eps) {
    OracleProblem p;
    p.rows = 2;
    p.cols = cols;
    p.eps = eps;
    p.x = ValueSpec{1, 0, v, v};
    p.weight = ValueSpec{1, 7, w, w, true};
    return p;
}
}  // namespace

TEST(Oracle, ConstantMagnitudeRowNormalisesToOne) {
    // |x| = 3 everywhere: mean of squares 9, so y = x / 3 * w exactly when eps = 0.
    const OracleProblem p = constant_problem(3.0f, 0.5f, 10, 0.0);
    const double inv = oracle_inv_rms<float>(p, 0);
    EXPECT_DOUBLE_EQ(inv, 1.0 / 3.0);
    for (int64_t c = 0; c < 10; ++c) {
        const double y = oracle_output<float>(p, 0, c, inv);
        EXPECT_DOUBLE_EQ(std::fabs(y), 0.5);
    }
}

TEST(Oracle, EpsIsInsideTheSquareRoot) {
    const OracleProblem p = constant_problem(0.1f, 1.0f, 4, 0.03);
    const double x = double(0.1f);
    EXPECT_NEAR(oracle_inv_rms<float>(p, 0), 1.0 / std::sqrt(x * x + 0.03), 1e-15);
}

TEST(Oracle, AllZeroRowGivesZeroNotNan) {
    OracleProblem p = constant_problem(1.0f, 1.0f, 8, 1e-5);
    p.x.zero_period = 2;  // row 1 is all zeros
    const double inv = oracle_inv_rms<float>(p, 1);
    EXPECT_TRUE(std::isfinite(inv));
    EXPECT_EQ(oracle_output<float>(p, 1, 3, inv), 0.0);
}

TEST(Oracle, ResidualIsAddedBeforeTheNorm) {
    OracleProblem p = constant_problem(1.0f, 1.0f, 6, 0.0);
    p.has_residual = true;
    p.residual = ValueSpec{2, 1, 0.5f, 0.5f};
    for (int64_t c = 0; c < 6; ++c) {
        const double s = oracle_sum_input<float>(p, 0, c);
        EXPECT_DOUBLE_EQ(s, double(raw_value(p.x, 0, c, 6)) + double(raw_value(p.residual, 0, c, 6)));
    }
}

TEST(Oracle, NanStaysInItsRow) {
    OracleProblem p = constant_problem(1.0f, 1.0f, 8, 1e-5);
    p.x.nan_row = 0;
    p.x.nan_col = 2;
    EXPECT_TRUE(std::isnan(oracle_inv_rms<float>(p, 0)));
    EXPECT_FALSE(std::isnan(oracle_inv_rms<float>(p, 1)));
}

TEST(Oracle, UsesTheRoundedInputs) {
    // 0.1 is not representable in bf16: the oracle must see the value the kernel sees.
    OracleProblem p = constant_problem(0.1f, 1.0f, 4, 0.0);
    const double x = __bfloat162float(__float2bfloat16_rn(0.1f));
    EXPECT_DOUBLE_EQ(std::fabs(oracle_sum_input<__nv_bfloat16>(p, 0, 0)), x);
}
