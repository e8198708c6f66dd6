/// @file test_half.cpp
/// @brief fp16 and bf16 conversions round to nearest even, like the GPU's __float2half_rn.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace {

float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

TEST(HalfConversion, ExactValuesAndLimits) {
    EXPECT_EQ(__half_as_ushort(__float2half_rn(1.0f)), 0x3c00);
    EXPECT_EQ(__half_as_ushort(__float2half_rn(-2.0f)), 0xc000);
    EXPECT_EQ(__half_as_ushort(__float2half_rn(65504.0f)), 0x7bff);
    EXPECT_EQ(__half_as_ushort(__float2half_rn(65519.0f)), 0x7bff);  // below the halfway point to 65536
    EXPECT_EQ(__half_as_ushort(__float2half_rn(65520.0f)), 0x7c00);  // ties to even: infinity
    EXPECT_EQ(__half_as_ushort(__float2half_rn(std::ldexp(1.0f, -24))), 0x0001);  // smallest subnormal
    EXPECT_EQ(__half_as_ushort(__float2half_rn(std::ldexp(1.0f, -25))), 0x0000);  // tie to even: zero
    EXPECT_EQ(__half_as_ushort(__float2half_rn(std::ldexp(1.5f, -25))), 0x0001);
    EXPECT_TRUE(std::isnan(__half2float(__float2half_rn(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfConversion, TiesRoundToEven) {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even mantissa wins (1.0).
    EXPECT_EQ(__half_as_ushort(__float2half_rn(1.0f + std::ldexp(1.0f, -11))), 0x3c00);
    // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9.
    EXPECT_EQ(__half_as_ushort(__float2half_rn(1.0f + 3 * std::ldexp(1.0f, -11))), 0x3c02);
}

TEST(HalfConversion, EveryHalfRoundTrips) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const __half h = __ushort_as_half(static_cast<unsigned short>(b));
        if (__hisnan(h)) continue;
        EXPECT_EQ(__half_as_ushort(__float2half_rn(__half2float(h))), b) << std::hex << b;
    }
}

TEST(Bf16Conversion, RoundsToNearestEven) {
    EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(1.0f)), 0x3f80);
    EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(from_bits(0x3f808000u))), 0x3f80);  // tie: even
    EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(from_bits(0x3f818000u))), 0x3f82);  // tie: even
    EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(from_bits(0x3f808001u))), 0x3f81);
    EXPECT_EQ(__bfloat162float(__float2bfloat16_rn(-3.0f)), -3.0f);
    EXPECT_TRUE(std::isnan(__bfloat162float(__float2bfloat16_rn(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
