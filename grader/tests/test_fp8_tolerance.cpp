// Lesson 11's oracle and tolerance on the CPU: the e4m3 rounding agrees with cuda_fp8.h's own
// conversion; the rule accepts one e4m3 step only where the exact quotient lies within ε of a
// rounding boundary, never two steps, never a NaN where saturation is due; honest fp32 kernels
// (three ways of computing the same thing) pass on every kind of row the grader uses, and the
// lesson's bugs (a scale taken before the weight, a wrong scale, y rounded to T, a conversion
// without saturation) fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "workbook/e4m3.h"
#include "workbook/oracle.h"
#include "workbook/tolerance.h"

using namespace workbook;

namespace {

/// cuda_fp8.h's own conversion of a float (its host code), as a value.
double cuda_e4m3(float v, __nv_saturation_t sat = __NV_SATFINITE) {
    return e4m3_to_double(__nv_cvt_float_to_fp8(v, sat, __NV_E4M3));
}

/// Every finite positive e4m3 value, in increasing order.
std::vector<double> e4m3_values() {
    std::vector<double> v;
    for (int b = 1; b <= 0x7e; ++b) v.push_back(e4m3_to_double(static_cast<uint8_t>(b)));
    return v;
}

}  // namespace

TEST(E4m3, DecodingMatchesCudaFp8) {
    for (int b = 0; b < 256; ++b) {
        const auto bits = static_cast<uint8_t>(b);
        const __half_raw h = __nv_cvt_fp8_to_halfraw(bits, __NV_E4M3);
        const float want = __half2float(__half(h));
        const double got = e4m3_to_double(bits);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "byte " << b;
        } else {
            EXPECT_EQ(got, want) << "byte " << b;
        }
    }
    EXPECT_EQ(e4m3_to_double(0x7e), kE4m3Max);
    EXPECT_EQ(e4m3_to_double(0x01), kE4m3MinSubnormal);
}

TEST(E4m3, RoundingMatchesCudaFp8AtEveryValueAndMidpoint) {
    const std::vector<double> v = e4m3_values();
    std::vector<double> probes = {0.0, 1e-30, kE4m3MinSubnormal / 2, kE4m3MinSubnormal / 2 * 1.0001, 448.0, 455.9,
                                  456.0, 456.1, 463.9, 464.0, 500.0, 1e30};
    for (size_t i = 0; i < v.size(); ++i) {
        probes.push_back(v[i]);
        if (i + 1 < v.size()) {
            const double mid = 0.5 * (v[i] + v[i + 1]);
            probes.push_back(mid);  // ties go to the even neighbour
            probes.push_back(std::nextafter(float(mid), 0.0f));
            probes.push_back(std::nextafter(float(mid), 1e9f));
        }
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
    for (int i = 0; i < 20000; ++i) probes.push_back(std::exp2(exponent(rng)));
    for (double p : probes) {
        for (double s : {1.0, -1.0}) {
            const float f = static_cast<float>(s * p);
            EXPECT_EQ(e4m3_round(f), cuda_e4m3(f)) << "value " << f;
            EXPECT_EQ(e4m3_to_double(e4m3_bits_of(e4m3_round(f))), e4m3_round(f)) << "bits of " << f;
        }
    }
    EXPECT_TRUE(std::isnan(e4m3_round(NAN)));
    EXPECT_EQ(e4m3_round(std::numeric_limits<double>::infinity()), kE4m3Max);
}

TEST(E4m3, StepsCountNeighbours) {
    EXPECT_EQ(e4m3_steps(1.0, 1.0), 0);
    EXPECT_EQ(e4m3_steps(1.0, 1.125), 1);
    EXPECT_EQ(e4m3_steps(1.0, 1.25), 2);
    EXPECT_EQ(e4m3_steps(1.0, 0.9375), 1);  // across the binade: 0.9375 is 1's lower neighbour
    EXPECT_EQ(e4m3_steps(kE4m3MinSubnormal, -kE4m3MinSubnormal), 2);
}

// ----------------------------------------------------------------------------- the rule itself

TEST(Fp8Rule, AcceptsTheRoundingOfTheExactQuotient) {
    const double rel = fp8_quotient_rel(4096);
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(-448.0, 448.0);
    for (int i = 0; i < 100000; ++i) {
        const double q = u(rng);
        EXPECT_TRUE(fp8_accepts(q, e4m3_round(q), rel)) << q;
    }
}

TEST(Fp8Rule, OneStepOnlyWithinEpsilonOfABoundary) {
    const double rel = fp8_quotient_rel(4096);
    // Between 1.0 and 1.125 the boundary is 1.0625.
    const double boundary = 1.0625;
    const double just_below = boundary * (1 - rel / 2), just_above = boundary * (1 + rel / 2);
    for (double u : {just_below, just_above, boundary}) {
        EXPECT_TRUE(fp8_accepts(u, 1.0, rel)) << u;
        EXPECT_TRUE(fp8_accepts(u, 1.125, rel)) << u;
    }
    // Three ε away the boundary is out of reach: only the rounding of u.
    const double below = boundary * (1 - 3 * rel), above = boundary * (1 + 3 * rel);
    EXPECT_TRUE(fp8_accepts(below, 1.0, rel));
    EXPECT_FALSE(fp8_accepts(below, 1.125, rel));
    EXPECT_TRUE(fp8_accepts(above, 1.125, rel));
    EXPECT_FALSE(fp8_accepts(above, 1.0, rel));
    // A representable quotient admits itself only.
    EXPECT_FALSE(fp8_accepts(1.0, 1.125, rel));
    EXPECT_FALSE(fp8_accepts(1.0, 0.9375, rel));
}

TEST(Fp8Rule, NeverTwoSteps) {
    const double rel = fp8_quotient_rel(65536);
    for (double boundary : {1.0625, 0.5 * (kE4m3MinSubnormal + 2 * kE4m3MinSubnormal), 432.0}) {
        const double lower = e4m3_round(boundary * (1 - 2 * rel)), upper = e4m3_round(boundary * (1 + 2 * rel));
        ASSERT_EQ(e4m3_steps(lower, upper), 1);
        const double below_lower = lower - e4m3_quantum(lower * 0.99);
        const double above_upper = upper >= kE4m3Max ? upper : upper + e4m3_quantum(upper);
        EXPECT_FALSE(fp8_accepts(boundary, below_lower, rel)) << boundary;
        if (above_upper != upper) EXPECT_FALSE(fp8_accepts(boundary, above_upper, rel)) << boundary;
    }
}

TEST(Fp8Rule, SaturationIsRequired) {
    const double rel = fp8_quotient_rel(4096);
    for (double u : {448.0 * (1 + 1e-7), 460.0, 612.5, 1e6}) {
        EXPECT_TRUE(fp8_accepts(u, 448.0, rel)) << u;
        EXPECT_TRUE(fp8_accepts(-u, -448.0, rel)) << u;
        EXPECT_FALSE(fp8_accepts(u, NAN, rel)) << u;
        EXPECT_FALSE(fp8_accepts(u, 416.0, rel)) << u;
    }
}

TEST(Fp8Rule, AllZeroRowIsZero) {
    EXPECT_TRUE(fp8_accepts(0.0, 0.0, 1e-4));
    EXPECT_TRUE(fp8_accepts(0.0, -0.0, 1e-4));
    EXPECT_FALSE(fp8_accepts(0.0, kE4m3MinSubnormal, 1e-4));
    EXPECT_FALSE(fp8_accepts(0.0, NAN, 1e-4));
    EXPECT_TRUE(fp8_scale_accepts(0.0, 0.0f, 1e-4));
    EXPECT_FALSE(fp8_scale_accepts(0.0, 1e-30f, 1e-4));
    EXPECT_FALSE(fp8_scale_accepts(0.0, NAN, 1e-4));
}

TEST(Fp8Rule, ScaleTolerance) {
    const double rel = fp8_scale_rel(4096);
    EXPECT_TRUE(fp8_scale_accepts(0.01, static_cast<float>(0.01 * (1 + rel / 2)), rel));
    EXPECT_FALSE(fp8_scale_accepts(0.01, static_cast<float>(0.01 * (1 + 1e-3)), rel));
    EXPECT_GT(fp8_quotient_rel(65536), fp8_scale_rel(65536));
    // Far below half an e4m3 step (2^-5 of the value at least): the interval never holds two boundaries.
    EXPECT_LT(fp8_quotient_rel(65536), 2.6e-4);
    EXPECT_LT(fp8_quotient_rel(4096), 2.1e-5);
}

// ----------------------------------------------------------------------------- emulated kernels

namespace {

/// How a kernel computes the row (the honest ways, then the bugs).
enum class Kernel {
    textbook,        ///< y = x·rstd·w, amax of y, scale = amax/448, q = e4m3(y / scale)
    factored,        ///< the reference: sum and max|x·w| together, q = e4m3(x·w · rstd·448/amax)
    reciprocal,      ///< q = e4m3(y · (448 / amax))
    pre_weight,      ///< bug: amax of x·rstd, before the weight
    scale_off,       ///< bug: a scale 0.1% off (and q from it)
    y_rounded_to_t,  ///< bug: y rounded to T before it is quantised
    no_saturation,   ///< bug: a conversion without __NV_SATFINITE
};

struct Verdict {
    int bad_scales = 0, bad_q = 0, neighbour_accepted = 0;
};

template <typename T>
float round_to(float v) {
    return Elem<T>::to_float(Elem<T>::from_float(v));
}

/// Emulates `k` in fp32 on every row of `p` (sequential fp32 sum, the largest drift) and judges
/// its scales and q with the grader's rule, against the fp64 oracle.
template <typename T>
Verdict judge(const OracleProblem& p, double clip, Kernel k) {
    Verdict v;
    const float fclip = static_cast<float>(clip);
    const double rel_s = fp8_scale_rel(p.cols), rel_q = fp8_quotient_rel(p.cols);
    std::vector<float> x(p.cols), w(p.cols), y(p.cols);
    for (int64_t r = 0; r < p.rows; ++r) {
        float sumsq = 0.0f, amax = 0.0f, max_xw = 0.0f;
        for (int64_t c = 0; c < p.cols; ++c) {
            x[c] = input_value<T>(p.x, r, c, p.cols);
            w[c] = input_value<T>(p.weight, 0, c, p.cols);
            sumsq += x[c] * x[c];
            max_xw = std::fmax(max_xw, std::fabs(x[c] * w[c]));
        }
        const float rstd = 1.0f / std::sqrt(sumsq / static_cast<float>(p.cols) + static_cast<float>(p.eps));
        for (int64_t c = 0; c < p.cols; ++c) {
            y[c] = x[c] * rstd * w[c];
            if (k == Kernel::y_rounded_to_t) y[c] = round_to<T>(y[c]);
            const float a = k == Kernel::pre_weight ? std::fabs(x[c] * rstd) : std::fabs(y[c]);
            amax = std::fmax(amax, a);
        }
        if (k == Kernel::factored) amax = rstd * max_xw;
        const float clipped = fclip < amax ? fclip : amax;
        float scale = clipped / 448.0f;
        if (k == Kernel::scale_off) scale *= 1.001f;
        const Fp8RowOracle o = oracle_fp8_row<T>(p, r, clip);
        if (!fp8_scale_accepts(o.scale, scale, rel_s)) ++v.bad_scales;
        for (int64_t c = 0; c < p.cols; ++c) {
            float qt;
            switch (k) {
                case Kernel::factored:
                    qt = clipped > 0 ? (x[c] * w[c]) * (rstd * (448.0f / clipped)) : 0.0f;
                    break;
                case Kernel::reciprocal: qt = clipped > 0 ? y[c] * (448.0f / clipped) : 0.0f; break;
                default: qt = scale > 0 ? y[c] / scale : 0.0f; break;
            }
            const double got = cuda_e4m3(qt, k == Kernel::no_saturation ? __NV_NOSAT : __NV_SATFINITE);
            const double u = oracle_fp8_quotient<T>(p, r, c, o);
            if (!fp8_accepts(u, got, rel_q)) ++v.bad_q;
            else if (got != e4m3_round(u)) ++v.neighbour_accepted;
        }
    }
    return v;
}

enum class Rows { normal, e4m3_numbers, ties, outliers, zero_rows, small };

OracleProblem problem(int64_t rows, int64_t cols, Rows kind, uint64_t seed = 5) {
    OracleProblem p;
    p.rows = rows;
    p.cols = cols;
    p.eps = 1e-5;
    p.x = ValueSpec{seed, 0, 0.0f, 2.0f};
    p.weight = ValueSpec{seed, 7, 0.25f, 2.0f, true};
    switch (kind) {
        case Rows::e4m3_numbers:
        case Rows::ties:
            p.x.e4m3_values = kind == Rows::ties ? 2 : 1;
            p.weight.lo = p.weight.hi = 1.0f;
            break;
        case Rows::outliers: p.x.outlier = 3000.0f; break;
        case Rows::zero_rows: p.x.zero_period = 2; break;
        case Rows::small:
            p.x.hi = 0.01f;
            p.eps = 1e-2;
            break;
        default: break;
    }
    return p;
}

template <typename T>
void expect_honest_kernels_pass(const OracleProblem& p, double clip, const char* what) {
    for (Kernel k : {Kernel::textbook, Kernel::factored, Kernel::reciprocal}) {
        const Verdict v = judge<T>(p, clip, k);
        EXPECT_EQ(v.bad_scales, 0) << what << ", kernel " << static_cast<int>(k) << ", cols " << p.cols;
        EXPECT_EQ(v.bad_q, 0) << what << ", kernel " << static_cast<int>(k) << ", cols " << p.cols;
    }
}

const double kNoClip = std::numeric_limits<double>::infinity();

}  // namespace

TEST(Fp8Kernels, HonestFp32KernelsPassEveryKindOfRow) {
    for (int64_t cols : {1, 19, 256, 4099}) {
        for (Rows kind : {Rows::normal, Rows::e4m3_numbers, Rows::ties, Rows::outliers, Rows::zero_rows, Rows::small}) {
            const OracleProblem p = problem(8, cols, kind);
            expect_honest_kernels_pass<float>(p, kNoClip, "f32");
            expect_honest_kernels_pass<__half>(p, kNoClip, "f16");
            expect_honest_kernels_pass<__nv_bfloat16>(p, kNoClip, "bf16");
        }
        expect_honest_kernels_pass<__nv_bfloat16>(problem(8, cols, Rows::normal), 2.0, "bf16, clip 2");
    }
}

TEST(Fp8Kernels, HonestFp32KernelsPassOnTheLongestRows) {
    expect_honest_kernels_pass<__nv_bfloat16>(problem(3, 65536, Rows::normal), kNoClip, "bf16");
    expect_honest_kernels_pass<float>(problem(3, 65536, Rows::normal), 1.5, "f32, clip 1.5");
    expect_honest_kernels_pass<__half>(problem(2, 65536, Rows::ties), kNoClip, "f16 ties");
}

TEST(Fp8Kernels, TheOneStepAllowanceIsWhatLetsTheTextbookKernelPassTies) {
    // Every quotient of this problem is a tie: a kernel's fp32 rounding puts it a hair to one
    // side, so its q is often the neighbour of the oracle's even choice. The rule accepts those.
    const OracleProblem p = problem(8, 4096, Rows::ties);
    const Verdict v = judge<float>(p, kNoClip, Kernel::textbook);
    EXPECT_EQ(v.bad_q, 0);
    EXPECT_GT(v.neighbour_accepted, 100);
    // Rows of e4m3 numbers have no boundary near any quotient: nothing needs the allowance.
    EXPECT_EQ(judge<float>(problem(8, 4096, Rows::e4m3_numbers), kNoClip, Kernel::textbook).neighbour_accepted, 0);
}

TEST(Fp8Kernels, AScaleTakenBeforeTheWeightFails) {
    const Verdict v = judge<__nv_bfloat16>(problem(16, 4096, Rows::normal), kNoClip, Kernel::pre_weight);
    EXPECT_EQ(v.bad_scales, 16);
    EXPECT_GT(v.bad_q, 1000);
}

TEST(Fp8Kernels, AScaleOffByATenthOfAPercentFails) {
    const Verdict v = judge<float>(problem(16, 4096, Rows::normal), kNoClip, Kernel::scale_off);
    EXPECT_EQ(v.bad_scales, 16);
    EXPECT_GT(v.bad_q, 0);  // q computed with the wrong scale: some cross a boundary they should not
}

TEST(Fp8Kernels, YRoundedToTBeforeQuantisingFails) {
    EXPECT_GT(judge<__nv_bfloat16>(problem(16, 4096, Rows::normal), kNoClip, Kernel::y_rounded_to_t).bad_q, 100);
    EXPECT_GT(judge<__half>(problem(16, 4096, Rows::normal), kNoClip, Kernel::y_rounded_to_t).bad_q, 10);
    // For fp32 the rounding is no rounding at all.
    EXPECT_EQ(judge<float>(problem(16, 4096, Rows::normal), kNoClip, Kernel::y_rounded_to_t).bad_q, 0);
}

TEST(Fp8Kernels, AConversionWithoutSaturationFailsWhereTheClipBites) {
    EXPECT_GT(judge<__nv_bfloat16>(problem(16, 4096, Rows::normal), 2.0, Kernel::no_saturation).bad_q, 100);
}
