/// @file test_fp8.cpp
/// @brief The emulator's cuda_fp8.h against the CUDA toolkit's own conversion code: every byte
///        decoded, every fp16 and bf16 bit pattern, every fp8 value and midpoint with its float
///        and double neighbours, every rounding position of every float binade, random floats,
///        doubles and pairs, in both formats with and without saturation. The toolkit's host
///        code is its statement of what the GPU's conversion (cvt.rn.satfinite where it
///        saturates) computes; WBEMU_FP8_EVERY_FLOAT=1 also runs all 2^32 floats (minutes).
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fp8_toolkit.h"

namespace {

float float_of(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
uint64_t bits_of(double d) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
}

/// One of the four conversions: e4m3 or e5m2, saturating or not.
struct Mode {
    bool saturate, e4m3;
    __nv_saturation_t sat() const { return saturate ? __NV_SATFINITE : __NV_NOSAT; }
    __nv_fp8_interpretation_t kind() const { return e4m3 ? __NV_E4M3 : __NV_E5M2; }
    std::string name() const {
        return std::string(e4m3 ? "e4m3" : "e5m2") + (saturate ? " __NV_SATFINITE" : " __NV_NOSAT");
    }
};
const Mode kModes[] = {{true, true}, {false, true}, {true, false}, {false, false}};

/// Counts disagreements and keeps the first few, so a broken conversion reports a handful of
/// inputs, not millions of lines.
class Mismatches {
public:
    void add(const std::string& what) {
        if (count_++ < 8) first_ << "\n  " << what;
    }
    uint64_t count() const { return count_; }
    std::string text() const { return std::to_string(count_) + " disagreement(s), the first:" + first_.str(); }

private:
    uint64_t count_ = 0;
    std::ostringstream first_;
};

std::string hex(uint64_t v) {
    std::ostringstream o;
    o << "0x" << std::hex << v;
    return o.str();
}

void check_float(float v, const Mode& m, Mismatches& bad) {
    const uint8_t want = fp8_toolkit::from_float(v, m.saturate, m.e4m3);
    const uint8_t got = __nv_cvt_float_to_fp8(v, m.sat(), m.kind());
    if (got != want)
        bad.add(m.name() + " of float " + hex(bits_of(v)) + " (" + std::to_string(v) + "): " + hex(got) +
                ", the toolkit " + hex(want));
}

void check_double(double v, const Mode& m, Mismatches& bad) {
    const uint8_t want = fp8_toolkit::from_double(v, m.saturate, m.e4m3);
    const uint8_t got = __nv_cvt_double_to_fp8(v, m.sat(), m.kind());
    if (got != want)
        bad.add(m.name() + " of double " + hex(bits_of(v)) + " (" + std::to_string(v) + "): " + hex(got) +
                ", the toolkit " + hex(want));
}

/// Every finite positive value of a format, in increasing order (decoded by the toolkit).
std::vector<double> finite_values(bool e4m3) {
    std::vector<double> v;
    for (int b = 1; b < 0x80; ++b) {
        __half_raw h;
        h.x = fp8_toolkit::to_half_bits(static_cast<uint8_t>(b), e4m3);
        const float f = static_cast<float>(__half(h));
        if (std::isfinite(f)) v.push_back(f);
    }
    return v;
}

TEST(Fp8, EveryByteDecodesAsTheToolkitDoes) {
    for (bool e4m3 : {true, false}) {
        for (int b = 0; b < 256; ++b) {
            const auto byte = static_cast<uint8_t>(b);
            EXPECT_EQ(__nv_cvt_fp8_to_halfraw(byte, e4m3 ? __NV_E4M3 : __NV_E5M2).x,
                      fp8_toolkit::to_half_bits(byte, e4m3))
                << (e4m3 ? "e4m3 " : "e5m2 ") << hex(b);
        }
        for (uint32_t two = 0; two < 0x10000; ++two) {
            const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(static_cast<uint16_t>(two), e4m3 ? __NV_E4M3 : __NV_E5M2);
            ASSERT_EQ(r.x | (uint32_t(r.y) << 16), fp8_toolkit::pair_to_half_bits(static_cast<uint16_t>(two), e4m3))
                << (e4m3 ? "e4m3 pair " : "e5m2 pair ") << hex(two);
        }
    }
    for (int b = 0; b < 256; ++b) {
        __nv_fp8_e4m3 q;
        q.__x = static_cast<uint8_t>(b);
        EXPECT_EQ(bits_of(static_cast<float>(q)), bits_of(fp8_toolkit::float_of_e4m3(static_cast<uint8_t>(b))))
            << hex(b);
    }
    // The format's landmarks, spelled out.
    __nv_fp8_e4m3 q;
    q.__x = 0x7e;
    EXPECT_EQ(static_cast<float>(q), 448.0f);
    q.__x = 0x01;
    EXPECT_EQ(static_cast<float>(q), std::ldexp(1.0f, -9));
    q.__x = 0x7f;
    EXPECT_TRUE(std::isnan(static_cast<float>(q)));
}

TEST(Fp8, EveryHalfAndBf16BitPattern) {
    for (const Mode& m : kModes) {
        Mismatches bad;
        for (uint32_t h = 0; h < 0x10000; ++h) {
            __half_raw hr;
            hr.x = static_cast<unsigned short>(h);
            const uint8_t got_h = __nv_cvt_halfraw_to_fp8(hr, m.sat(), m.kind());
            if (got_h != fp8_toolkit::from_half_bits(static_cast<uint16_t>(h), m.saturate, m.e4m3))
                bad.add(m.name() + " of fp16 " + hex(h));
            __nv_bfloat16_raw br;
            br.x = static_cast<unsigned short>(h);
            const uint8_t got_b = __nv_cvt_bfloat16raw_to_fp8(br, m.sat(), m.kind());
            if (got_b != fp8_toolkit::from_bf16_bits(static_cast<uint16_t>(h), m.saturate, m.e4m3))
                bad.add(m.name() + " of bf16 " + hex(h));
        }
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
}

TEST(Fp8, AroundEveryValueAndEveryMidpoint) {
    for (const Mode& m : kModes) {
        const std::vector<double> v = finite_values(m.e4m3);
        // Each value, each midpoint to the next one (a tie), the midpoint past the largest value
        // (where rounding overflows), half the smallest subnormal, zero, infinity.
        std::vector<double> probes = {0.0, v.front() / 2, v.back() + (v.back() - v[v.size() - 2]) / 2,
                                      std::numeric_limits<double>::infinity()};
        for (size_t i = 0; i < v.size(); ++i) {
            probes.push_back(v[i]);
            if (i + 1 < v.size()) probes.push_back((v[i] + v[i + 1]) / 2);
        }
        Mismatches bad;
        for (double p : probes) {
            for (double s : {1.0, -1.0}) {
                const double d = s * p;
                // The float itself and its neighbours up to two steps away; the double and its
                // neighbours one step away (values no float holds: rounded once, not twice).
                float f = static_cast<float>(d);
                for (int k = 0; k < 2; ++k) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
                for (int k = 0; k < 5; ++k, f = std::nextafter(f, std::numeric_limits<float>::infinity()))
                    check_float(f, m, bad);
                check_double(std::nextafter(d, -std::numeric_limits<double>::infinity()), m, bad);
                check_double(d, m, bad);
                check_double(std::nextafter(d, std::numeric_limits<double>::infinity()), m, bad);
            }
        }
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
}

TEST(Fp8, NaNsAndSaturation) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (const Mode& m : kModes) {
        Mismatches bad;
        for (uint32_t payload : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xffc00000u, 0xff800001u, 0xffffffffu})
            check_float(float_of(payload), m, bad);
        for (uint64_t payload : {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
                                 0xfff7ffffffffffffull})
            check_double([&] { double d; std::memcpy(&d, &payload, 8); return d; }(), m, bad);
        for (float f : {inf, -inf, 1e30f, -1e30f, std::numeric_limits<float>::max(), 0.0f, -0.0f,
                        std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()})
            check_float(f, m, bad);
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
    // What lesson 11 rests on, spelled out: e4m3 saturates to ±448 with __NV_SATFINITE, a NaN
    // stays NaN (0x7f, the sign dropped), and without saturation an overflow is NaN.
    EXPECT_EQ(__nv_cvt_float_to_fp8(464.0f, __NV_SATFINITE, __NV_E4M3), 0x7e);  // the tie rounds to even, 448
    EXPECT_EQ(__nv_cvt_float_to_fp8(std::nextafter(464.0f, 1e9f), __NV_SATFINITE, __NV_E4M3), 0x7e);
    EXPECT_EQ(__nv_cvt_float_to_fp8(-inf, __NV_SATFINITE, __NV_E4M3), 0xfe);
    EXPECT_EQ(__nv_cvt_float_to_fp8(std::nextafter(464.0f, 1e9f), __NV_NOSAT, __NV_E4M3), 0x7f);
    EXPECT_EQ(__nv_cvt_float_to_fp8(-nan, __NV_SATFINITE, __NV_E4M3), 0x7f);
    EXPECT_EQ(__nv_fp8_e4m3(1e6f).__x, 0x7e);
}

TEST(Fp8, EveryRoundingPositionOfEveryBinade) {
    // Every sign, every exponent and every value of the top 11 mantissa bits (every fp8 step and
    // its halves, in every binade, subnormal targets included), each with the low 12 bits empty,
    // the lowest set, just below half, exactly half, just above, or full.
    for (const Mode& m : kModes) {
        Mismatches bad;
        for (uint32_t sign = 0; sign < 2; ++sign)
            for (uint32_t e = 0; e < 256; ++e)
                for (uint32_t top = 0; top < 2048; ++top)
                    for (uint32_t low : {0x000u, 0x001u, 0x7ffu, 0x800u, 0x801u, 0xfffu})
                        check_float(float_of((sign << 31) | (e << 23) | (top << 12) | low), m, bad);
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
}

TEST(Fp8, RandomFloatsDoublesAndPairs) {
    std::mt19937_64 rng(20240611);
    for (const Mode& m : kModes) {
        Mismatches bad;
        for (int i = 0; i < 2000000; ++i) check_float(float_of(static_cast<uint32_t>(rng())), m, bad);
        // Doubles where the fp8 formats round, with every mantissa bit random.
        std::uniform_int_distribution<int> exponent(-20, 18);
        for (int i = 0; i < 1000000; ++i) {
            const double mant = 1.0 + static_cast<double>(rng() >> 12) * 0x1p-52;
            check_double(std::ldexp((rng() & 1) ? -mant : mant, exponent(rng)), m, bad);
        }
        for (int i = 0; i < 200000; ++i) {
            const float lo = float_of(static_cast<uint32_t>(rng())), hi = float_of(static_cast<uint32_t>(rng()));
            const uint16_t got = __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), m.sat(), m.kind());
            const uint16_t want = fp8_toolkit::from_float2(lo, hi, m.saturate, m.e4m3);
            if (got != want) bad.add(m.name() + " of the pair (" + hex(bits_of(lo)) + ", " + hex(bits_of(hi)) + ")");
        }
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
}

TEST(Fp8, TypesHaveTheToolkitsLayoutAndConversions) {
    static_assert(sizeof(__nv_fp8_e4m3) == 1 && alignof(__nv_fp8_e4m3) == 1, "one byte");
    static_assert(sizeof(__nv_fp8x2_e4m3) == 2 && alignof(__nv_fp8x2_e4m3) == 2, "a pair");
    static_assert(sizeof(__nv_fp8x4_e4m3) == 4 && alignof(__nv_fp8x4_e4m3) == 4, "four");
    static_assert(sizeof(__nv_fp8_e5m2) == 1 && sizeof(__nv_fp8x2_e5m2) == 2 && sizeof(__nv_fp8x4_e5m2) == 4, "e5m2");
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> value(-600.0f, 600.0f);
    for (int i = 0; i < 100000; ++i) {
        const float a = value(rng), b = value(rng), c = value(rng), d = value(rng);
        ASSERT_EQ(__nv_fp8_e4m3(a).__x, fp8_toolkit::e4m3_of(a)) << a;
        ASSERT_EQ(__nv_fp8_e4m3(static_cast<double>(a)).__x, fp8_toolkit::from_double(a, true, true)) << a;
        ASSERT_EQ(__nv_fp8_e4m3(__float2half_rn(a)).__x, fp8_toolkit::from_half_bits(__half_as_ushort(__float2half_rn(a)), true, true));
        ASSERT_EQ(__nv_fp8x2_e4m3(make_float2(a, b)).__x, fp8_toolkit::from_float2(a, b, true, true)) << a << " " << b;
        const uint32_t four = __nv_fp8x4_e4m3(make_float4(a, b, c, d)).__x;
        ASSERT_EQ(four, fp8_toolkit::from_float2(a, b, true, true) | (uint32_t(fp8_toolkit::from_float2(c, d, true, true)) << 16));
        const float2 back = static_cast<float2>(__nv_fp8x2_e4m3(make_float2(a, b)));
        ASSERT_EQ(back.x, fp8_toolkit::float_of_e4m3(fp8_toolkit::e4m3_of(a)));
        ASSERT_EQ(back.y, fp8_toolkit::float_of_e4m3(fp8_toolkit::e4m3_of(b)));
        ASSERT_EQ(__nv_fp8_e5m2(a).__x, fp8_toolkit::from_float(a, true, false)) << a;
    }
    EXPECT_EQ(__nv_fp8_e4m3(3).__x, fp8_toolkit::e4m3_of(3.0f));
    EXPECT_EQ(static_cast<float>(__nv_fp8_e4m3(0.3f)), fp8_toolkit::float_of_e4m3(fp8_toolkit::e4m3_of(0.3f)));
}

TEST(Fp8, EveryFloat) {
    if (!std::getenv("WBEMU_FP8_EVERY_FLOAT"))
        GTEST_SKIP() << "all 2^32 floats in four modes take minutes: set WBEMU_FP8_EVERY_FLOAT=1 to run them";
    for (const Mode& m : kModes) {
        Mismatches bad;
        for (uint64_t b = 0; b < (uint64_t(1) << 32); ++b) check_float(float_of(static_cast<uint32_t>(b)), m, bad);
        EXPECT_EQ(bad.count(), 0u) << bad.text();
    }
}

}  // namespace
