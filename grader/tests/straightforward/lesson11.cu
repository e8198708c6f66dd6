/// @file lesson11.cu
/// @brief A straightforward lesson 11 kernel: lesson 4's straightforward kernel with the amax and
/// the e4m3 conversion. G threads own a row (at most 8 vectors each), the row is loaded once and
/// kept in registers while the sum of squares and max|x · w| reduce together, the scale is written
/// once per row, and q is converted element by element, saturating. Rows longer than 1024 threads ×
/// 8 vectors (narrow widths only) are read twice. A decode batch (256 rows or fewer) gets one
/// vector a thread. It checks that the gate stays fair: scripts/straightforward-check grades it on
/// a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "workbook/rmsnorm_fp8.h"

namespace workbook::lesson11 {
namespace {

constexpr int kIters = 8;  ///< vectors a thread holds

__device__ float to_float(float v) { return v; }
__device__ float to_float(__half v) { return __half2float(v); }
/// bf16 is the top half of an fp32: a shift. Written out, it lets the compiler keep a held row
/// packed; with the intrinsic it keeps fp32 copies of it, and an 8-vector row spills.
__device__ float to_float(__nv_bfloat16 v) { return __uint_as_float(static_cast<unsigned>(__bfloat16_as_ushort(v)) << 16); }
template <typename T> __device__ T from_float(float v);
template <> __device__ float from_float<float>(float v) { return v; }
template <> __device__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
    T v[W];
};

template <int W>
struct alignas(W) QPack {
    __nv_fp8_storage_t v[W];
};

/// Sum and max over the G threads of a row (G a power of two); every one of them gets both.
__device__ void row_reduce(float& sum, float& mx, int g, float2* partials) {
    for (int offset = (g < 32 ? g : 32) / 2; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    }
    if (g <= 32) return;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partials[warp] = make_float2(sum, mx);
    __syncthreads();
    const float2 mine = lane < g / 32 ? partials[lane] : make_float2(0.0f, 0.0f);
    sum = mine.x;
    mx = mine.y;
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    }
    __syncthreads();
}

/// The factor that takes x · w to e4m3's range, and the row's scale. A NaN amax stays NaN
/// (clip < NaN is false); an all-zero or NaN row gets factor 0, so q is 0 there.
__device__ float row_factor(float sum, float mx, int cols, float eps, float clip, float* scale) {
    const float rstd = 1.0f / sqrtf(sum / cols + eps);
    const float amax = rstd * mx;
    const float clipped = clip < amax ? clip : amax;
    *scale = clipped / 448.0f;
    return clipped > 0.0f ? rstd * (448.0f / clipped) : 0.0f;
}

__device__ __nv_fp8_storage_t e4m3(float v) { return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }

struct Args {
    int64_t xs, qs, rows;
    int cols;
    float eps, clip;
};

template <typename T, int W>
__global__ void __launch_bounds__(1024) rows_in_registers(const T* x, const T* weight, __nv_fp8_storage_t* q, float* scale, Args a, int g) {
    using P = Pack<T, W>;
    __shared__ float2 partials[32];
    const int nvec = a.cols / W;
    const int lane = threadIdx.x % g;
    const int rows_per_block = blockDim.x / g;
    const P* w = reinterpret_cast<const P*>(weight);
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * rows_per_block) {
        const int64_t row = first + threadIdx.x / g;
        const bool active = row < a.rows;
        const P* xr = reinterpret_cast<const P*>(x + (active ? row : 0) * a.xs);
        P v[kIters];
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) v[i] = xr[lane + i * g];
        float sum = 0.0f, mx = 0.0f;
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) {
                const P wv = w[lane + i * g];
                for (int k = 0; k < W; ++k) {
                    const float f = to_float(v[i].v[k]);
                    sum += f * f;
                    mx = fmaxf(mx, fabsf(f * to_float(wv.v[k])));
                }
            }
        row_reduce(sum, mx, g, partials);
        if (!active) continue;
        float s;
        const float factor = row_factor(sum, mx, a.cols, a.eps, a.clip, &s);
        if (lane == 0) scale[row] = s;
        QPack<W>* qr = reinterpret_cast<QPack<W>*>(q + row * a.qs);
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const int idx = lane + i * g;
            if (idx >= nvec) continue;
            const P wv = w[idx];
            QPack<W> out;
            for (int k = 0; k < W; ++k) out.v[k] = e4m3(to_float(v[i].v[k]) * to_float(wv.v[k]) * factor);
            qr[idx] = out;
        }
    }
}

/// Rows too long to hold: the sums in a first read, q from a second. 1024 threads.
template <typename T, int W>
__global__ void __launch_bounds__(1024) rows_read_twice(const T* x, const T* weight, __nv_fp8_storage_t* q, float* scale, Args a) {
    using P = Pack<T, W>;
    __shared__ float2 partials[32];
    const int nvec = a.cols / W;
    const P* w = reinterpret_cast<const P*>(weight);
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const P* xr = reinterpret_cast<const P*>(x + row * a.xs);
        float sum = 0.0f, mx = 0.0f;
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            const P xv = xr[i], wv = w[i];
            for (int k = 0; k < W; ++k) {
                const float f = to_float(xv.v[k]);
                sum += f * f;
                mx = fmaxf(mx, fabsf(f * to_float(wv.v[k])));
            }
        }
        row_reduce(sum, mx, blockDim.x, partials);
        float s;
        const float factor = row_factor(sum, mx, a.cols, a.eps, a.clip, &s);
        if (threadIdx.x == 0) scale[row] = s;
        QPack<W>* qr = reinterpret_cast<QPack<W>*>(q + row * a.qs);
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            const P xv = xr[i], wv = w[i];
            QPack<W> out;
            for (int k = 0; k < W; ++k) out.v[k] = e4m3(to_float(xv.v[k]) * to_float(wv.v[k]) * factor);
            qr[i] = out;
        }
    }
}

template <typename T, int W>
cudaError_t launch(const T* x, const T* weight, __nv_fp8_storage_t* q, float* scale, const Args& a,
                   cudaStream_t stream) {
    const int nvec = a.cols / W;
    if (nvec > 1024 * kIters) {
        rows_read_twice<T, W><<<static_cast<int>(a.rows < 65536 ? a.rows : 65536), 1024, 0, stream>>>(x, weight, q,
                                                                                                        scale, a);
        return cudaGetLastError();
    }
    // A few rows (a decode batch) cannot fill the GPU: one vector a thread, the shortest path.
    const int per_thread = a.rows <= 256 ? 1 : kIters;
    int g = 4;
    while (g < 1024 && g * per_thread < nvec) g *= 2;
    const int block = g <= 32 ? 256 : g;  // a row group past a warp is the whole block
    const int64_t blocks = (a.rows + block / g - 1) / (block / g);
    rows_in_registers<T, W><<<static_cast<int>(blocks < 65536 ? blocks : 65536), block, 0, stream>>>(x, weight, q,
                                                                                                      scale, a, g);
    return cudaGetLastError();
}

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

template <typename T>
cudaError_t rmsnorm_fp8_quant(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                              int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps, float clip,
                              cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > 65536 || !(clip > 0.0f) || !(eps >= 0.0f)) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (!x || !weight || !q || !scale) return cudaErrorInvalidValue;
    if (rows > 1 && (x_row_stride < cols || q_row_stride < cols)) return cudaErrorInvalidValue;
    int w = 16 / sizeof(T);
    while (w > 1) {
        if (cols % w == 0 && aligned(x, w * sizeof(T)) && aligned(weight, w * sizeof(T)) && aligned(q, w) &&
            (rows == 1 || (x_row_stride % w == 0 && q_row_stride % w == 0)))
            break;
        w /= 2;
    }
    const Args a{x_row_stride, q_row_stride, rows, static_cast<int>(cols), eps, clip};
    auto* qb = reinterpret_cast<__nv_fp8_storage_t*>(q);
    if (w == 8) return launch<T, (sizeof(T) == 2 ? 8 : 4)>(x, weight, qb, scale, a, stream);
    if (w == 4) return launch<T, 4>(x, weight, qb, scale, a, stream);
    if (w == 2) return launch<T, 2>(x, weight, qb, scale, a, stream);
    return launch<T, 1>(x, weight, qb, scale, a, stream);
}

}  // namespace workbook::lesson11
