// Input generators and layouts: deterministic per seed, in range, never all zeros, and the
// special rows (zeros, NaN) exactly where a case asks for them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "workbook/inputs.h"

using namespace workbook;

TEST(Inputs, SameSeedSameValuesOtherSeedOtherValues) {
    ValueSpec a{42, 0}, b{42, 0}, c{43, 0};
    int differ = 0;
    for (int64_t i = 0; i < 100; ++i) {
        EXPECT_EQ(raw_value(a, i / 10, i % 10, 10), raw_value(b, i / 10, i % 10, 10));
        differ += raw_value(a, i / 10, i % 10, 10) != raw_value(c, i / 10, i % 10, 10);
    }
    EXPECT_GT(differ, 95);
}

TEST(Inputs, ValuesStayInRangeWithBothSigns) {
    ValueSpec s{7, 1, 0.25f, 2.0f};
    int negative = 0, zeros = 0;
    std::set<float> distinct;
    for (int64_t i = 0; i < 10000; ++i) {
        const float v = raw_value(s, i / 100, i % 100, 100);
        EXPECT_GE(std::fabs(v), 0.25f);
        EXPECT_LE(std::fabs(v), 2.0f);
        negative += v < 0;
        zeros += v == 0;
        distinct.insert(v);
    }
    EXPECT_EQ(zeros, 0);
    EXPECT_GT(negative, 4000);
    EXPECT_LT(negative, 6000);
    EXPECT_GT(distinct.size(), 9000u);
}

TEST(Inputs, TensorsOfOneSeedDiffer) {
    ValueSpec x{9, 0}, r{9, 1};
    int same = 0;
    for (int64_t i = 0; i < 1000; ++i) same += raw_value(x, 0, i, 1000) == raw_value(r, 0, i, 1000);
    EXPECT_LT(same, 5);
}

TEST(Inputs, ZeroRowsAndNanAreWhereAsked) {
    ValueSpec s{3, 0};
    s.zero_period = 2;
    s.nan_row = 4;
    s.nan_col = 5;
    for (int64_t c = 0; c < 64; ++c) {
        EXPECT_EQ(raw_value(s, 1, c, 64), 0.0f);
        EXPECT_EQ(raw_value(s, 3, c, 64), 0.0f);
        EXPECT_NE(raw_value(s, 2, c, 64), 0.0f);
    }
    EXPECT_TRUE(std::isnan(raw_value(s, 4, 5, 64)));
    EXPECT_FALSE(std::isnan(raw_value(s, 4, 6, 64)));
    EXPECT_FALSE(std::isnan(raw_value(s, 6, 5, 64)));
}

TEST(Inputs, CombMakesEveryColumnAnOutlierInExactlyOneRow) {
    ValueSpec s{13, 0};
    s.outlier = 256.0f;
    s.comb_period = 8;
    const int64_t cols = 61;  // not a multiple of the period: each row's last outlier sits elsewhere
    for (int64_t c = 0; c < cols; ++c) {
        int rows_with_outlier = 0;
        for (int64_t r = 0; r < 8; ++r) {
            const float v = std::fabs(raw_value(s, r, c, cols));
            if (c % 8 == r) {
                EXPECT_EQ(v, 256.0f) << "row " << r << " col " << c;
                ++rows_with_outlier;
            } else {
                EXPECT_LT(v, 2.0f) << "row " << r << " col " << c;
            }
        }
        EXPECT_EQ(rows_with_outlier, 1) << "col " << c;
        // The pattern repeats every comb_period rows.
        EXPECT_EQ(std::fabs(raw_value(s, 8 + c % 8, c, cols)), 256.0f);
    }
}

TEST(Inputs, WeightDependsOnColumnOnly) {
    ValueSpec w{5, 7, 0.25f, 2.0f, true};
    for (int64_t c = 0; c < 50; ++c) EXPECT_EQ(raw_value(w, 0, c, 50), raw_value(w, 999, c, 50));
}

TEST(Inputs, RoundingToHalfIsExact) {
    ValueSpec s{11, 0, 30000.0f, 65504.0f};
    for (int64_t c = 0; c < 100; ++c) {
        const float v = input_value<__half>(s, 0, c, 100);
        EXPECT_EQ(v, __half2float(__float2half_rn(v)));
        EXPECT_LE(std::fabs(v), 65504.0f);
    }
}

TEST(Layout, StridedRowsOwnOnlyTheirColumns) {
    const Layout l = Layout::rows_of(3, 5, 8);
    EXPECT_EQ(l.offset(2, 4), 20);
    EXPECT_EQ(l.span(), 21);
    EXPECT_TRUE(l.owns(0));
    EXPECT_TRUE(l.owns(4));
    EXPECT_FALSE(l.owns(5));  // padding
    EXPECT_FALSE(l.owns(7));
    EXPECT_TRUE(l.owns(8));
    EXPECT_TRUE(l.owns(20));
}

TEST(Layout, HeadsOfATokenWithPaddingAndAVPart) {
    // q of a qkv tensor: 2 tokens, 3 heads of dim 4, head stride 6, token stride 3*6 + 10 (k and v after q)
    const Layout l = Layout::heads_of(2, 3, 4, 28, 6);
    EXPECT_EQ(l.rows, 6);
    EXPECT_EQ(l.offset(4, 1), 28 + 6 + 1);  // token 1, head 1, col 1
    EXPECT_TRUE(l.owns(13));
    EXPECT_FALSE(l.owns(16));  // padding after head 2
    EXPECT_FALSE(l.owns(18));  // the part after the heads (k, v)
    EXPECT_TRUE(l.owns(28));
    EXPECT_EQ(l.span(), 28 + 2 * 6 + 4);
}

TEST(Seeds, DerivedSeedsDependOnCaseAndRepetition) {
    EXPECT_EQ(derive_seed(1, "prime_cols", 0), derive_seed(1, "prime_cols", 0));
    EXPECT_NE(derive_seed(1, "prime_cols", 0), derive_seed(1, "prime_cols", 1));
    EXPECT_NE(derive_seed(1, "prime_cols", 0), derive_seed(1, "odd_cols", 0));
    EXPECT_NE(derive_seed(1, "prime_cols", 0), derive_seed(2, "prime_cols", 0));
}
