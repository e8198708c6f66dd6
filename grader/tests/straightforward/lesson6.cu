/// @file lesson6.cu
/// @brief A straightforward lesson 6 kernel: lesson 4's straightforward kernel over heads. Heads
/// are numbered 0 .. tokens·heads − 1; a group of G lanes (at most 8 vectors each) takes head n,
/// finds token n / heads and head n % heads, and loads the whole head before writing any of it (y
/// may be x). The width also divides both strides. A decode batch (up to 128 tokens of 32 heads)
/// takes the README's short path from launch to load: one vector a thread (16 heads of 128 a
/// block), the head number split in 32 bits where it fits, and 1 / head_dim from the host. It
/// checks that the gate stays fair: scripts/straightforward-check grades it on a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson6 {
namespace {

constexpr int kIters = 8;  ///< vectors a thread holds
constexpr int64_t kDecodeHeads = 4096;  ///< up to this many heads, one vector a thread

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

/// Where a head sits in a [tokens, heads, head_dim] view.
struct Layout {
    int64_t token_stride, head_stride;
};

template <typename T, int W>
__global__ void __launch_bounds__(1024) heads_in_registers(const T* x, Layout xl, const T* weight, T* y, Layout yl, int64_t tokens,
                                   int64_t heads, int cols, float inv_cols, float eps, int g) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = cols / W;
    const int lane = threadIdx.x % g;
    const int per_block = blockDim.x / g;
    const int64_t count = tokens * heads;
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * per_block; first < count;
         first += static_cast<int64_t>(gridDim.x) * per_block) {
        const int64_t n = first + threadIdx.x / g;
        const bool active = n < count;
        int64_t t = 0, h = 0;
        if (active && count <= UINT32_MAX) {  // a 32-bit division is a few instructions, a 64-bit one a long routine
            const uint32_t u = static_cast<uint32_t>(n), hs = static_cast<uint32_t>(heads);
            t = u / hs;
            h = u - static_cast<uint32_t>(t) * hs;
        } else if (active) {
            t = n / heads;
            h = n % heads;
        }
        const P* xr = reinterpret_cast<const P*>(x + t * xl.token_stride + h * xl.head_stride);
        P v[kIters];
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) v[i] = xr[lane + i * g];
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec)
                for (int k = 0; k < W; ++k) sum += to_float(v[i].v[k]) * to_float(v[i].v[k]);
        const float inv_rms = rsqrtf(row_sum(sum, g, partials) * inv_cols + eps);
        if (!active) continue;
        const P* w = reinterpret_cast<const P*>(weight);
        P* yr = reinterpret_cast<P*>(y + t * yl.token_stride + h * yl.head_stride);
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
            const int idx = lane + i * g;
            if (idx >= nvec) continue;
            const P wv = w[idx];
            P out;
            for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(to_float(v[i].v[k]) * inv_rms * to_float(wv.v[k]));
            yr[idx] = out;
        }
    }
}

/// Heads too long to hold (narrow widths only): sum squares, then read the head again. 1024 threads.
template <typename T, int W>
__global__ void __launch_bounds__(1024) heads_read_twice(const T* x, Layout xl, const T* weight, T* y, Layout yl, int64_t tokens,
                                 int64_t heads, int cols, float eps) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = cols / W;
    for (int64_t n = blockIdx.x; n < tokens * heads; n += gridDim.x) {
        const int64_t t = n / heads, h = n % heads;
        const P* xr = reinterpret_cast<const P*>(x + t * xl.token_stride + h * xl.head_stride);
        float sum = 0.0f;
        for (int i = threadIdx.x; i < nvec; i += blockDim.x)
            for (int k = 0; k < W; ++k) sum += to_float(xr[i].v[k]) * to_float(xr[i].v[k]);
        const float inv_rms = rsqrtf(row_sum(sum, blockDim.x, partials) / cols + eps);
        P* yr = reinterpret_cast<P*>(y + t * yl.token_stride + h * yl.head_stride);
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            const P xv = xr[i], wv = reinterpret_cast<const P*>(weight)[i];
            P out;
            for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(to_float(xv.v[k]) * inv_rms * to_float(wv.v[k]));
            yr[i] = out;
        }
    }
}

template <typename T, int W>
cudaError_t launch(const T* x, Layout xl, const T* weight, T* y, Layout yl, int64_t tokens, int64_t heads, int cols,
                   float eps, cudaStream_t stream) {
    const int nvec = cols / W;
    const int64_t count = tokens * heads;
    if (nvec > 1024 * kIters) {
        heads_read_twice<T, W><<<static_cast<int>(count < 65536 ? count : 65536), 1024, 0, stream>>>(
            x, xl, weight, y, yl, tokens, heads, cols, eps);
        return cudaGetLastError();
    }
    // A decode batch cannot fill the GPU: one vector a thread, the shortest path.
    const int per_thread = count <= kDecodeHeads ? 1 : kIters;
    int g = 4;
    while (g < 1024 && g * per_thread < nvec) g *= 2;
    const int block = g <= 32 ? 256 : g;  // a row group past a warp is the whole block
    const int64_t blocks = (count + block / g - 1) / (block / g);
    heads_in_registers<T, W><<<static_cast<int>(blocks < 65536 ? blocks : 65536), block, 0, stream>>>(
        x, xl, weight, y, yl, tokens, heads, cols, 1.0f / static_cast<float>(cols), eps, g);
    return cudaGetLastError();
}

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

template <typename T>
cudaError_t qk_rmsnorm(const T* x, int64_t x_token_stride, int64_t x_head_stride, const T* weight, T* y,
                       int64_t y_token_stride, int64_t y_head_stride, int64_t tokens, int64_t heads,
                       int64_t head_dim, float eps, cudaStream_t stream) {
    if (tokens == 0 || heads == 0) return cudaSuccess;
    int w = 16 / sizeof(T);
    while (w > 1) {
        const int bytes = w * sizeof(T);
        if (head_dim % w == 0 && aligned(x, bytes) && aligned(y, bytes) && aligned(weight, bytes) &&
            (tokens == 1 || (x_token_stride % w == 0 && y_token_stride % w == 0)) &&
            (heads == 1 || (x_head_stride % w == 0 && y_head_stride % w == 0)))
            break;
        w /= 2;
    }
    const Layout xl{x_token_stride, x_head_stride}, yl{y_token_stride, y_head_stride};
    const int n = static_cast<int>(head_dim);
    if (w == 8) return launch<T, (sizeof(T) == 2 ? 8 : 4)>(x, xl, weight, y, yl, tokens, heads, n, eps, stream);
    if (w == 4) return launch<T, 4>(x, xl, weight, y, yl, tokens, heads, n, eps, stream);
    if (w == 2) return launch<T, 2>(x, xl, weight, y, yl, tokens, heads, n, eps, stream);
    return launch<T, 1>(x, xl, weight, y, yl, tokens, heads, n, eps, stream);
}

}  // namespace workbook::lesson6
