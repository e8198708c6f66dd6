// The gate's arithmetic: medians, noise band, and the verdict at its edges.
#include <gtest/gtest.h>

#include "workbook/gate.h"

using namespace workbook;

TEST(Gate, Median) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
    EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
    EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Gate, GbpsIsDecimal) { EXPECT_DOUBLE_EQ(gbps(2e9, 1.0), 2.0); }

TEST(Gate, NoiseBandHasAFloor) {
    EXPECT_DOUBLE_EQ(noise_band({1, 1, 1}, {1, 1, 1}), 0.01);
    EXPECT_NEAR(noise_band({1.05, 1.05}, {1.0, 1.0}), 0.05, 1e-12);
}

TEST(Gate, Verdicts) {
    const double copy = 3000;
    EXPECT_EQ(gate_verdict(2000, 2000, copy, 0.8, 0.01), GateVerdict::pass);
    EXPECT_EQ(gate_verdict(1600, 2000, copy, 0.8, 0.01), GateVerdict::pass);    // exactly the fraction
    EXPECT_EQ(gate_verdict(1590, 2000, copy, 0.8, 0.01), GateVerdict::pass);    // inside the noise band
    EXPECT_EQ(gate_verdict(1500, 2000, copy, 0.8, 0.01), GateVerdict::slow);
    EXPECT_EQ(gate_verdict(3200, 2000, copy, 0.8, 0.01), GateVerdict::impossible);  // > 1.05 x copy
    EXPECT_EQ(gate_verdict(3100, 2000, copy, 0.8, 0.01), GateVerdict::pass);
    EXPECT_EQ(gate_verdict(100, 0, copy, 0.8, 0.01), GateVerdict::slow);
}
