// Lesson 9's tolerance (norm_output_tolerance, rstd_tolerance): honest fp32 LayerNorm passes on
// rows whose mean is far from zero and where x^ * w and the bias cancel; the LayerNorm bugs the
// lesson names (one-pass variance, a mean rounded to T) fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "lessons/common/plan_helpers.h"
#include "workbook/oracle.h"
#include "workbook/tolerance.h"

using namespace workbook;

namespace {

enum class Variant { two_pass, welford, one_pass, mean_rounded_to_t };

/// Round to T and back, on the host.
template <typename T>
float round_to(float v) {
    return Elem<T>::to_float(Elem<T>::from_float(v));
}

/// LayerNorm with a bias; with `large_mean`, the rows of the lesson's `layernorm_large_mean` case.
OracleProblem layer_problem(int64_t cols, bool large_mean, DType t, bool bias = true) {
    OracleProblem p;
    p.rows = 64;
    p.cols = cols;
    p.eps = 1e-5;
    p.layer_norm = true;
    p.x = ValueSpec{99, 0, 0.0f, 2.0f};
    if (large_mean) make_large_mean(p.x, t);
    p.weight = ValueSpec{99, 7, 0.25f, 2.0f, true};
    p.has_bias = bias;
    p.bias = ValueSpec{99, 8, 0.0f, 1.0f, true};
    return p;
}

/// An fp32 sum in a kernel's order: 128 threads each add their elements (strided by 128) in
/// sequence, then the partial sums are added pairwise.
float kernel_sum(const std::vector<float>& v) {
    std::vector<float> part(128, 0.0f);
    for (size_t i = 0; i < v.size(); ++i) part[i % 128] += v[i];
    for (size_t width = 64; width > 0; width /= 2)
        for (size_t i = 0; i < width; ++i) part[i] += part[i + width];
    return part[0];
}

/// Elements of y (rounded to T) and rstd a kernel computing in fp32 with `v` would produce,
/// that fall outside the tolerance; sums are taken in a kernel's order (kernel_sum).
template <typename T>
int outside_tolerance(const OracleProblem& p, DType t, Variant v, bool check_rstd = false) {
    int bad = 0;
    for (int64_t r = 0; r < p.rows; ++r) {
        std::vector<float> s(p.cols);
        for (int64_t c = 0; c < p.cols; ++c) s[c] = input_value<T>(p.x, r, c, p.cols);
        float mean = 0.0f, var = 0.0f;
        if (v == Variant::welford) {
            // As a kernel runs it: each of 256 threads folds its own elements (strided by 256)
            // in sequence, then the threads' states are merged pairwise (Chan et al.).
            const int threads = 256;
            std::vector<float> n(threads, 0.0f), m(threads, 0.0f), m2(threads, 0.0f);
            for (int i = 0; i < threads; ++i)
                for (int64_t c = i; c < p.cols; c += threads) {
                    n[i] += 1.0f;
                    const float d = s[c] - m[i];
                    m[i] += d / n[i];
                    m2[i] += d * (s[c] - m[i]);
                }
            for (int width = 1; width < threads; width *= 2)
                for (int i = 0; i + width < threads; i += 2 * width) {
                    const int j = i + width;
                    const float total = n[i] + n[j];
                    if (total == 0.0f) continue;
                    const float delta = m[j] - m[i];
                    m[i] += delta * (n[j] / total);
                    m2[i] += m2[j] + delta * delta * n[i] * (n[j] / total);
                    n[i] = total;
                }
            mean = m[0];
            var = m2[0] / float(p.cols);
        } else {
            std::vector<float> sq(p.cols);
            for (int64_t c = 0; c < p.cols; ++c) sq[c] = s[c] * s[c];
            mean = kernel_sum(s) / float(p.cols);
            if (v == Variant::mean_rounded_to_t) mean = round_to<T>(mean);
            if (v == Variant::one_pass) {
                var = kernel_sum(sq) / float(p.cols) - mean * mean;
            } else {
                for (int64_t c = 0; c < p.cols; ++c) sq[c] = (s[c] - mean) * (s[c] - mean);
                var = kernel_sum(sq) / float(p.cols);
            }
        }
        const float rstd = 1.0f / std::sqrt(std::max(var, 0.0f) + float(p.eps));
        const RowStats exact = oracle_row_stats<T>(p, r);
        if (check_rstd && !within(exact.rstd, rstd, rstd_tolerance(t, p.cols), rstd_scale(exact.mean_abs, exact.rstd))) {
            ++bad;
            if (std::getenv("NORM_TOL_DEBUG"))
                std::printf("rstd row %lld cols %lld mean %.9g/%.9g var %.9g: exact %.9g got %.9g rel %.3g tol %.3g\n", (long long)r, (long long)p.cols, mean, exact.mean, var, exact.rstd, rstd,
                            std::fabs(rstd - exact.rstd) / exact.rstd, rstd_tolerance(t, p.cols).rel);
        }
        for (int64_t c = 0; c < p.cols; ++c) {
            const float w = float(oracle_param<T>(p.weight, p.weight_f32, c, p.cols));
            const float b = p.has_bias ? float(oracle_param<T>(p.bias, p.bias_f32, c, p.cols)) : 0.0f;
            const float got = round_to<T>((s[c] - mean) * rstd * w + b);
            const double scale = oracle_output_scale<T>(p, r, c, exact);
            const double want = oracle_output<T>(p, r, c, exact);
            if (!within(want, got, norm_output_tolerance(t, p.cols), scale)) {
                ++bad;
                if (std::getenv("NORM_TOL_DEBUG"))
                    std::printf("y[%lld,%lld]: exact %.9g got %.9g scale %.4g\n", (long long)r, (long long)c, want, got,
                                scale);
            }
        }
    }
    return bad;
}

}  // namespace

TEST(NormTolerance, HonestLayerNormPassesWithALargeMean) {
    for (int64_t cols : {512, 4096, 65536}) {
        const OracleProblem f32 = layer_problem(cols, true, DType::f32), f16 = layer_problem(cols, true, DType::f16),
                            bf16 = layer_problem(cols, true, DType::bf16);
        EXPECT_EQ(outside_tolerance<float>(f32, DType::f32, Variant::two_pass, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<float>(f32, DType::f32, Variant::welford, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<__half>(f16, DType::f16, Variant::two_pass, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<__half>(f16, DType::f16, Variant::welford, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<__nv_bfloat16>(bf16, DType::bf16, Variant::two_pass, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<__nv_bfloat16>(bf16, DType::bf16, Variant::welford, true), 0) << cols;
    }
}

TEST(NormTolerance, HonestLayerNormPassesWithAZeroMean) {
    // Here y = x^ * w + b often nearly cancels: relative to |y| alone the fp32 error would not fit.
    for (int64_t cols : {19, 4096, 65536}) {
        const OracleProblem p = layer_problem(cols, false, DType::f32);
        EXPECT_EQ(outside_tolerance<float>(p, DType::f32, Variant::two_pass, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<__nv_bfloat16>(p, DType::bf16, Variant::two_pass), 0) << cols;
    }
}

TEST(NormTolerance, HonestLayerNormPassesWithoutBiasWhereYIsTiny) {
    // y = (s - mean) * rstd * w is tiny where s is close to the mean; the fp32 mean's own error
    // is relative to the row's magnitudes, not to |s| or |mean| there.
    for (int64_t cols : {1000, 4096, 4100}) {
        const OracleProblem p = layer_problem(cols, false, DType::f32, false);
        EXPECT_EQ(outside_tolerance<float>(p, DType::f32, Variant::two_pass, true), 0) << cols;
        EXPECT_EQ(outside_tolerance<float>(p, DType::f32, Variant::welford, true), 0) << cols;
    }
}

TEST(NormTolerance, OnePassVarianceFails) {
    EXPECT_GT(outside_tolerance<float>(layer_problem(4096, true, DType::f32), DType::f32, Variant::one_pass), 100);
    EXPECT_GT(outside_tolerance<__half>(layer_problem(4096, true, DType::f16), DType::f16, Variant::one_pass), 100);
}

TEST(NormTolerance, MeanRoundedToTFails) {
    EXPECT_GT(outside_tolerance<__half>(layer_problem(4096, true, DType::f16), DType::f16,
                                        Variant::mean_rounded_to_t), 100);
    EXPECT_GT(outside_tolerance<__nv_bfloat16>(layer_problem(4096, true, DType::bf16), DType::bf16,
                                               Variant::mean_rounded_to_t), 100);
}

TEST(NormTolerance, EqualsTheRmsRuleWithoutBias) {
    // For RMSNorm without a bias the scale is |y|: the same bound as output_tolerance.
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
        const Tolerance a = output_tolerance(t, 4096), b = norm_output_tolerance(t, 4096);
        EXPECT_DOUBLE_EQ(a.rel, b.rel + b.scale_rel);
        EXPECT_DOUBLE_EQ(a.abs, b.abs);
    }
}

TEST(NormTolerance, RstdOfTheWrongRowFails) {
    const OracleProblem p = layer_problem(4096, false, DType::f32);
    const double r0 = oracle_row_stats<float>(p, 0).rstd, r1 = oracle_row_stats<float>(p, 1).rstd;
    EXPECT_TRUE(within(r0, r0 * (1 + 1e-6), rstd_tolerance(DType::f32, 4096)));
    EXPECT_FALSE(within(r0, r1, rstd_tolerance(DType::f32, 4096)));
}
