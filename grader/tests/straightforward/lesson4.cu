/// @file lesson4.cu
/// @brief A straightforward lesson 4 kernel: what the lesson's README teaches and no tuning beyond
/// it. The vector width is halved from 16 bytes until cols, both strides and every pointer allow
/// it; G threads own a row (G from cols: at most 8 vectors a thread, several rows a block when G is
/// a warp or less), every load before any use, the row kept in registers, the sum reduced with
/// shuffles inside a warp and through shared memory across warps. Rows longer than 1024 threads × 8
/// vectors (narrow widths only) are read twice. A decode batch (256 rows or fewer) gets one vector
/// a thread, and loads the weight with it. It checks that the gate stays fair: scripts/straightforward-check grades it on a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson4 {
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

/// Sum over the G threads of a row (G a power of two); every one of them gets the total.
__device__ float row_sum(float v, int g, float* partials) {
    for (int offset = (g < 32 ? g : 32) / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (g <= 32) return v;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    v = lane < g / 32 ? partials[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    __syncthreads();
    return v;
}

/// EARLY_W: the weight is loaded with the row (a decode batch, one vector a thread), so its memory
/// latency overlaps the row's instead of following the reduction.
template <typename T, int W, bool EARLY_W>
__global__ void __launch_bounds__(1024) rows_in_registers(const T* x, int64_t xs, const T* weight, T* y, int64_t ys, int64_t rows, int cols,
                                  float eps, int g) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = cols / W;
    const int lane = threadIdx.x % g;
    const int rows_per_block = blockDim.x / g;
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block; first < rows;
         first += static_cast<int64_t>(gridDim.x) * rows_per_block) {
        const int64_t row = first + threadIdx.x / g;
        const bool active = row < rows;
        const P* xr = reinterpret_cast<const P*>(x + (active ? row : 0) * xs);
        P v[kIters];
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) v[i] = xr[lane + i * g];
        const P* w = reinterpret_cast<const P*>(weight);
        P early_w;
        if (EARLY_W && active && lane < nvec) early_w = w[lane];
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec)
                for (int k = 0; k < W; ++k) sum += to_float(v[i].v[k]) * to_float(v[i].v[k]);
        const float inv_rms = rsqrtf(row_sum(sum, g, partials) / cols + eps);
        if (!active) continue;
        P* yr = reinterpret_cast<P*>(y + row * ys);
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const int idx = lane + i * g;
            if (idx >= nvec) continue;
            const P wv = EARLY_W && i == 0 ? early_w : w[idx];
            P out;
            for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(to_float(v[i].v[k]) * inv_rms * to_float(wv.v[k]));
            yr[idx] = out;
        }
    }
}

/// Rows too long to hold: sum squares, then read the row again to scale it. 1024 threads.
template <typename T, int W>
__global__ void __launch_bounds__(1024) rows_read_twice(const T* x, int64_t xs, const T* weight, T* y, int64_t ys, int64_t rows, int cols,
                                float eps) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = cols / W;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const P* xr = reinterpret_cast<const P*>(x + row * xs);
        float sum = 0.0f;
        for (int i = threadIdx.x; i < nvec; i += blockDim.x)
            for (int k = 0; k < W; ++k) sum += to_float(xr[i].v[k]) * to_float(xr[i].v[k]);
        const float inv_rms = rsqrtf(row_sum(sum, blockDim.x, partials) / cols + eps);
        P* yr = reinterpret_cast<P*>(y + row * ys);
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            const P xv = xr[i], wv = reinterpret_cast<const P*>(weight)[i];
            P out;
            for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(to_float(xv.v[k]) * inv_rms * to_float(wv.v[k]));
            yr[i] = out;
        }
    }
}

template <typename T, int W>
cudaError_t launch(const T* x, int64_t xs, const T* weight, T* y, int64_t ys, int64_t rows, int cols, float eps,
                   cudaStream_t stream) {
    const int nvec = cols / W;
    if (nvec > 1024 * kIters) {
        rows_read_twice<T, W><<<static_cast<int>(rows < 65536 ? rows : 65536), 1024, 0, stream>>>(x, xs, weight, y, ys,
                                                                                                    rows, cols, eps);
        return cudaGetLastError();
    }
    // A few rows (a decode batch) cannot fill the GPU: one vector a thread, the shortest path.
    const int per_thread = rows <= 256 ? 1 : kIters;
    int g = 4;
    while (g < 1024 && g * per_thread < nvec) g *= 2;
    const int block = g <= 32 ? 256 : g;  // a row group past a warp is the whole block
    const int64_t blocks = (rows + block / g - 1) / (block / g);
    if (per_thread == 1) {
        rows_in_registers<T, W, true><<<static_cast<int>(blocks < 65536 ? blocks : 65536), block, 0, stream>>>(
            x, xs, weight, y, ys, rows, cols, eps, g);
    } else {
        rows_in_registers<T, W, false><<<static_cast<int>(blocks < 65536 ? blocks : 65536), block, 0, stream>>>(
            x, xs, weight, y, ys, rows, cols, eps, g);
    }
    return cudaGetLastError();
}

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

template <typename T>
cudaError_t rmsnorm(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride, int64_t rows,
                    int64_t cols, float eps, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    int w = 16 / sizeof(T);
    while (w > 1) {
        const int bytes = w * sizeof(T);
        if (cols % w == 0 && aligned(x, bytes) && aligned(y, bytes) && aligned(weight, bytes) &&
            (rows == 1 || (x_row_stride % w == 0 && y_row_stride % w == 0)))
            break;
        w /= 2;
    }
    const int n = static_cast<int>(cols);
    if (w == 8) return launch<T, (sizeof(T) == 2 ? 8 : 4)>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, stream);
    if (w == 4) return launch<T, 4>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, stream);
    if (w == 2) return launch<T, 2>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, stream);
    return launch<T, 1>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, stream);
}

}  // namespace workbook::lesson4
