/// @file fp8_checks.cu
/// @brief Lesson 11's oracle kernels (one thread per row, fp64) and the report of what is wrong.
#include "lessons/11-fp8-quant/fp8_checks.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "engine/check_grid.h"
#include "engine/launch_guard.h"
#include "workbook/cuda_check.h"
#include "workbook/tolerance.h"

namespace workbook {
namespace {

constexpr int kThreads = kCheckThreads;
constexpr auto grid_for = check_grid_for;

/// Counters of one check; `first_*` start at their maximum.
struct Fp8Stats {
    unsigned long long bad_scale, first_scale;      ///< rows whose scale is wrong, the first of them
    unsigned long long bad_q, first_q, unwritten_q;  ///< elements of q that are wrong (index r · cols + c)
    unsigned long long hidden_nan, first_hidden;     ///< elements of NaN rows that dequantise to a number
};

/// Deliberately naive: one thread walks one whole row in fp64 (twice: the sum of squares, then max|y|).
template <typename T>
__global__ void fp8_rows_kernel(OracleProblem p, double clip, const float* scale, double rel, Fp8RowOracle* rows,
                                Fp8Stats* stats) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < p.rows; r += int64_t(gridDim.x) * blockDim.x) {
        const Fp8RowOracle o = oracle_fp8_row<T>(p, r, clip);
        rows[r] = o;
        if (o.amax != o.amax) continue;  // a NaN row: judged element by element
        if (!fp8_scale_accepts(o.scale, scale[r], rel)) {
            atomicAdd(&stats->bad_scale, 1ull);
            atomicMin(&stats->first_scale, static_cast<unsigned long long>(r));
        }
    }
}

template <typename T>
__global__ void fp8_q_kernel(OracleProblem p, Layout layout, const uint8_t* q, const float* scale,
                             const Fp8RowOracle* rows, double rel, Fp8Stats* stats) {
    const int64_t n = p.rows * p.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / p.cols, c = i % p.cols;
        const uint8_t bits = q[layout.offset(r, c)];
        const double got = e4m3_to_double(bits);
        const Fp8RowOracle o = rows[r];
        if (o.amax != o.amax) {
            // The row holds a NaN: q · scale must be NaN, through either factor.
            const float s = scale[r];
            if (got == got && s == s) {
                atomicAdd(&stats->hidden_nan, 1ull);
                atomicMin(&stats->first_hidden, static_cast<unsigned long long>(i));
            }
            continue;
        }
        if (!fp8_accepts(oracle_fp8_quotient<T>(p, r, c, o), got, rel)) {
            atomicAdd(&stats->bad_q, 1ull);
            if (bits == 0xff) atomicAdd(&stats->unwritten_q, 1ull);
            atomicMin(&stats->first_q, static_cast<unsigned long long>(i));
        }
    }
}

template <typename F>
void with_activation_type(DType t, F&& f) {
    switch (t) {
        case DType::f16: f(__half{}); break;
        case DType::bf16: f(__nv_bfloat16{}); break;
        default: f(float{}); break;
    }
}

template <typename T>
T read_one(const void* base, int64_t offset) {
    T v;
    WB_CUDA_CHECK(cudaMemcpy(&v, static_cast<const T*>(base) + offset, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

/// Within a few times the scale's tolerance: close enough to name a cause.
bool near(double got, double candidate, double rel) {
    return candidate > 0 && std::fabs(got - candidate) <= 4 * rel * candidate;
}

/// Why a scale may be wrong, when the value shows it; "" otherwise.
std::string scale_cause(double got, const Fp8RowOracle& o, double rel, bool clipped) {
    if (got != got) return " (NaN: a row without a NaN has a finite scale; an all-zero row's is 0)";
    if (o.amax == 0) return " (the row's y is all zero: its scale is exactly 0)";
    const double pre = o.pre_weight_amax / kE4m3Max;
    if (near(got, pre, rel))
        return " (that is max|x·rstd|/448, the amax taken before the weight multiplied in: the scale must "
               "come from y = x·rstd·weight)";
    if (clipped && near(got, o.raw_amax / kE4m3Max, rel)) return " (that is max|y|/448 without the clip)";
    if (near(got, o.amax, rel)) return " (that is the amax itself: scale = amax / 448)";
    if (near(got, kE4m3Max / o.amax, rel)) return " (that is 448 / amax, the reciprocal of the scale)";
    return "";
}

}  // namespace

std::string check_fp8_outputs(const Fp8Problem& f, const DeviceTensor& q, const DeviceTensor& scale,
                              cudaStream_t stream) {
    const OracleProblem& p = f.p;
    if (p.rows == 0) return "";
    const double rel_scale = fp8_scale_rel(p.cols), rel_q = fp8_quotient_rel(p.cols);
    // Lesson 11's q is bytes, its scale floats; anything else is a mistake in the case table.
    if (q.dtype() != DType::e4m3 || scale.dtype() != DType::f32) throw std::logic_error("lesson 11: q must be e4m3, scale f32");
    Fp8Stats* stats = nullptr;
    Fp8RowOracle* rows = nullptr;
    WB_CUDA_CHECK(cudaMallocAsync(&stats, sizeof(Fp8Stats), stream));
    WB_CUDA_CHECK(cudaMallocAsync(&rows, sizeof(Fp8RowOracle) * p.rows, stream));
    const Fp8Stats init{0, ~0ull, 0, ~0ull, 0, 0, ~0ull};
    WB_CUDA_CHECK(cudaMemcpyAsync(stats, &init, sizeof init, cudaMemcpyHostToDevice, stream));
    const auto* scales = static_cast<const float*>(scale.data());
    const auto* bytes = static_cast<const uint8_t*>(q.data());
    with_activation_type(f.dtype, [&](auto tag) {
        using T = decltype(tag);
        fp8_rows_kernel<T><<<grid_for(p.rows), kThreads, 0, stream>>>(p, f.clip, scales, rel_scale, rows, stats);
        fp8_q_kernel<T><<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(p, q.layout(), bytes, scales, rows, rel_q,
                                                                           stats);
    });
    WB_CUDA_CHECK(cudaGetLastError());
    Fp8Stats s{};
    WB_CUDA_CHECK(cudaMemcpyAsync(&s, stats, sizeof s, cudaMemcpyDeviceToHost, stream));
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaFreeAsync(stats, stream));
    WB_CUDA_CHECK(cudaFreeAsync(rows, stream));

    const unsigned long long total = static_cast<unsigned long long>(p.rows) * static_cast<unsigned long long>(p.cols);
    std::string out;
    char buf[768];
    // The first wrong row and element are recomputed on the CPU: the report does not rest on the GPU oracle alone.
    auto row_oracle = [&](int64_t r) {
        Fp8RowOracle o{};
        with_activation_type(f.dtype, [&](auto tag) { o = oracle_fp8_row<decltype(tag)>(p, r, f.clip); });
        return o;
    };
    if (s.bad_q == total && s.unwritten_q == total) {
        out += "no element of q was written (every byte still holds the poison 0xff, an e4m3 NaN). ";
    } else if (s.bad_q) {
        const int64_t r = static_cast<int64_t>(s.first_q / p.cols), c = static_cast<int64_t>(s.first_q % p.cols);
        const Fp8RowOracle o = row_oracle(r);
        double u = 0;
        with_activation_type(f.dtype, [&](auto tag) { u = oracle_fp8_quotient<decltype(tag)>(p, r, c, o); });
        const uint8_t bits = read_one<uint8_t>(q.data(), q.layout().offset(r, c));
        const double got = e4m3_to_double(bits), want = e4m3_round(u);
        const double au = std::fabs(u);
        if (got != got && o.amax == 0) {
            std::snprintf(buf, sizeof buf,
                          "q[row %lld, col %lld] is NaN (0x%02x) in a row whose y is all zero (amax 0: x is zero, or "
                          "the weight is zero wherever x is not): the contract gives such a row scale 0 and q 0, but "
                          "y / scale is 0/0 there, so the division must be guarded, by a test on the amax",
                          (long long)r, (long long)c, bits);
        } else if (got != got && au >= kE4m3Max) {
            std::snprintf(buf, sizeof buf,
                          "q[row %lld, col %lld] is NaN (0x%02x) where %g was expected: y/scale = %.6g is at or "
                          "beyond e4m3's largest value, 448, and the conversion must saturate to ±448 "
                          "(__NV_SATFINITE, cvt.rn.satfinite)",
                          (long long)r, (long long)c, bits, want, u);
        } else if (got != got) {
            std::snprintf(buf, sizeof buf, "q[row %lld, col %lld] is NaN (0x%02x%s); expected %g (y/scale = %.9g)",
                          (long long)r, (long long)c, bits, bits == 0xff ? ": the poison, so probably never written" : "",
                          want, u);
        } else {
            const int steps = e4m3_steps(want, got);
            std::snprintf(buf, sizeof buf,
                          "q[row %lld, col %lld] = %g, expected %g: %d e4m3 step%s off (y/scale = %.9g exactly; "
                          "one step is allowed only where y/scale lies within a relative %.2g of a rounding "
                          "boundary, which it does not)",
                          (long long)r, (long long)c, got, want, steps, steps == 1 ? "" : "s", u, rel_q);
        }
        out += buf;
        std::snprintf(buf, sizeof buf,
                      "; %llu of the %llu elements of q are wrong, %llu of them 0xff (the poison: never written, or "
                      "a negative NaN). ",
                      s.bad_q, total, s.unwritten_q);
        out += buf;
    }
    if (s.bad_scale) {
        const int64_t r = static_cast<int64_t>(s.first_scale);
        const Fp8RowOracle o = row_oracle(r);
        const float got = read_one<float>(scales, r);
        std::snprintf(buf, sizeof buf,
                      "scale[row %lld]: expected %.9g (min(max|y|, clip)/448), got %.9g (tolerance rel %.3g)%s; "
                      "%llu of the %lld scales are wrong. ",
                      (long long)r, o.scale, got, rel_scale,
                      scale_cause(got, o, rel_scale, o.amax < o.raw_amax).c_str(), s.bad_scale, (long long)p.rows);
        out += buf;
    }
    if (s.hidden_nan) {
        const int64_t r = static_cast<int64_t>(s.first_hidden / p.cols), c = static_cast<int64_t>(s.first_hidden % p.cols);
        const float sc = read_one<float>(scales, r);
        const double got = e4m3_to_double(read_one<uint8_t>(q.data(), q.layout().offset(r, c)));
        std::snprintf(buf, sizeof buf,
                      "row %lld holds a NaN in x, but q[row %lld, col %lld] · scale = %g · %g is a number: the row "
                      "must dequantise to NaN (scale NaN, or every q NaN); a max that skips NaNs (fmaxf) hides a NaN "
                      "this way. %llu element(s) of NaN rows dequantise to numbers. ",
                      (long long)r, (long long)r, (long long)c, got, sc, s.hidden_nan);
        out += buf;
    }
    return out;
}

}  // namespace workbook
