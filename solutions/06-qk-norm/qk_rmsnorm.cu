/**
 * @file qk_rmsnorm.cu
 * @brief Lesson 6 reference: per-head RMSNorm of q or k inside a fused qkv tensor.
 *
 * What it shows:
 *  - a tensor seen as [tokens, heads, head_dim] through two strides: head (t, h) starts at
 *    t · token_stride + h · head_stride, so the q or k slice of a fused qkv projection is
 *    normalised where it lies, with no copy, and the v part is never touched;
 *  - one warp per head, or part of a warp when head_dim is small (a 128-element fp16 head
 *    is 16 vectors of 16 bytes: 16 lanes take one each), many heads per block, and a
 *    reduction that is all shuffles: no shared memory, no barrier;
 *  - the (token, head) of a flat head index computed once per thread, as a multiply and a
 *    shift by a divider the host prepared (the index sits between a thread's start and its
 *    first load, so every cycle of it is latency);
 *  - in place (y exactly x) for free: each element is read and written by the same thread.
 *
 * What it leaves out: head_dim is usually 64 to 256, but the contract allows up to 65536;
 * long heads use the same block-per-row and two-pass shapes as lesson 4.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace workbook::lesson6 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxHeadDim = 65536;
/// Largest grid.x a launch accepts; kernels walk the heads, so any count fits.
constexpr int64_t kMaxGrid = 2147483647;

/// Minimum resident blocks for __launch_bounds__. 0 leaves the choice to the compiler;
/// for 1024-thread blocks it would squeeze registers to fit two blocks per SM and spill.
constexpr int min_blocks(int block) { return block >= 1024 ? 1 : 0; }

/// [head-divider]
/// Division of a 32-bit head index by the head count as a multiply and a shift, with the
/// constants worked out once on the host (Granlund and Montgomery's method): for
/// d = heads, l the smallest power with 2^l ≥ d and m = ⌊2^32 (2^l − d) / d⌋ + 1,
/// n / d = (⌊m n / 2^32⌋ + n) >> l for every n < 2^32. A hardware division does not exist;
/// the compiler's 32-bit routine is about twenty dependent instructions.
struct HeadDivider {
    uint32_t multiplier;
    uint32_t shift;
};

/// The divider for d, 1 ≤ d < 2^32.
inline HeadDivider make_divider(uint32_t d) {
    uint32_t l = 0;
    while (l < 32 && (uint64_t{1} << l) < d) ++l;
    const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << l) - d)) / d + 1;
    return {static_cast<uint32_t>(m), l};
}

__device__ __forceinline__ uint32_t divide(uint32_t n, HeadDivider d) {
    const uint64_t high = (static_cast<uint64_t>(n) * d.multiplier) >> 32;
    return static_cast<uint32_t>((high + n) >> d.shift);
}
/// [head-divider]

/// Everything a kernel needs about one call. x and y carry no __restrict__: y may be x.
template <typename T>
struct Args {
    const T* x;
    int64_t x_token_stride;
    int64_t x_head_stride;
    const T* weight;
    T* y;
    int64_t y_token_stride;
    int64_t y_head_stride;
    int64_t rows;  ///< tokens · heads
    int64_t heads;
    int head_dim;
    float eps;
    float inv_dim;        ///< 1 / head_dim
    HeadDivider per_token;  ///< divides a head index by `heads` (when rows < 2^32)
};

/// fp32 view of an element: all arithmetic is done in fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Round-to-nearest-even back to the storage type.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements that move as one access (2, 4, 8 or 16 bytes).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// fp32 copies of a pack's elements, 16-bit pairs converted as pairs.
template <typename T, int VEC>
__device__ __forceinline__ void unpack(const Pack<T, VEC>& p, float (&f)[VEC]) {
    if constexpr (std::is_same_v<T, __half> && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 t = __half22float2(*reinterpret_cast<const __half2*>(&p.v[k]));
            f[k] = t.x;
            f[k + 1] = t.y;
        }
    } else if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 t = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&p.v[k]));
            f[k] = t.x;
            f[k + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
    }
}

/// Round VEC fp32 values to T, two at a time for 16-bit types.
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> pack(const float (&f)[VEC]) {
    Pack<T, VEC> p;
    if constexpr (std::is_same_v<T, __half> && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2)
            *reinterpret_cast<__half2*>(&p.v[k]) = __floats2half2_rn(f[k], f[k + 1]);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2)
            *reinterpret_cast<__nv_bfloat162*>(&p.v[k]) = __floats2bfloat162_rn(f[k], f[k + 1]);
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) p.v[k] = from_float<T>(f[k]);
    }
    return p;
}

/// Tells the compiler the packed head may have changed, so it converts it to fp32 again
/// for the output instead of keeping fp32 copies alive through the reduction. No code.
template <typename T, int VEC>
__device__ __forceinline__ void keep_packed(Pack<T, VEC>& p) {
    if constexpr (sizeof(p) % 4 == 0) {
        unsigned* words = reinterpret_cast<unsigned*>(&p);
#pragma unroll
        for (int i = 0; i < static_cast<int>(sizeof(p) / 4); ++i) asm volatile("" : "+r"(words[i]));
    } else {
        asm volatile("" : "+h"(*reinterpret_cast<unsigned short*>(&p)));
    }
}

/// [head-sum]
/// Sum over the G consecutive lanes that share a head (G a power of two, at most 32).
/// With G = 16, a warp reduces 2 heads at once in four shuffle rounds.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
/// [head-sum]

/// Sum over a block of BLOCK threads (long heads only); every thread gets the total.
template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float (*partials)[BLOCK / kWarpSize], int bank) {
    constexpr int kWarps = BLOCK / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    v = group_sum<kWarpSize>(v);
    if (lane == 0) partials[bank][warp] = v;
    __syncthreads();
    const float total = lane < kWarps ? partials[bank][lane] : 0.0f;
    return group_sum<kWarpSize>(total);
}

/// Slots for block_sum; a sub-warp group needs none (one dummy slot keeps the type valid).
template <int G>
using Partials = float[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

/// Sum over the G threads of a head.
template <int G>
__device__ __forceinline__ float head_sum(float v, Partials<G>& partials, int bank) {
    if constexpr (G <= kWarpSize) {
        return group_sum<G>(v);
    } else {
        return block_sum<G>(v, partials, bank);
    }
}

/// [head-index]
/// Element offsets of head `row` (= token · heads + head) in x and y. SMALL: every head
/// index fits 32 bits (every real tensor), and the division is the host's divider; past
/// that, a 64-bit division, a long software routine on the GPU. The offsets themselves
/// are 64-bit, since tokens · token_stride passes 2^31 on large tensors.
template <bool SMALL, typename T>
__device__ __forceinline__ void head_offsets(const Args<T>& a, int64_t row, int64_t& x_off, int64_t& y_off) {
    int64_t token, head;
    if constexpr (SMALL) {
        const uint32_t r = static_cast<uint32_t>(row);
        const uint32_t t = divide(r, a.per_token);
        token = t;
        head = r - t * static_cast<uint32_t>(a.heads);
    } else {
        token = row / a.heads;
        head = row - token * a.heads;
    }
    x_off = token * a.x_token_stride + head * a.x_head_stride;
    y_off = token * a.y_token_stride + head * a.y_head_stride;
}
/// [head-index]

/**
 * One head per group of G threads, kept in registers: thread `lane` owns vectors lane,
 * lane + G, ... of head `row`. `row` past the end (the last block's spare groups) still
 * joins the reduction, since a block-wide sum needs every thread, and stores nothing.
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool EARLY_W, bool SMALL>
__device__ __forceinline__ void normalise_head(const Args<T>& a, int64_t row, int lane, Partials<G>& partials,
                                               int bank) {
    using P = Pack<T, VEC>;
    const int nvec = a.head_dim / VEC;
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    const bool active = row < a.rows;
    int64_t x_off = 0, y_off = 0;
    if (active) head_offsets<SMALL>(a, row, x_off, y_off);
    const P* xr = reinterpret_cast<const P*>(a.x + x_off);
    P* yr = reinterpret_cast<P*>(a.y + y_off);

    /// [head-load]
    // The whole head is loaded before any of it is written: in place (y == x) each
    // element is read and then overwritten by the same thread, never by another.
    P xv[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = lane + i * G;
        if (active && idx < nvec) xv[i] = xr[idx];
    }
    // EARLY_W: the weight is loaded with x, so its latency hides under the same wait.
    P wv[EARLY_W ? ITERS : 1];
    if constexpr (EARLY_W) {
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) wv[i] = w[idx];
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = lane + i * G;
        if (active && idx < nvec) {
            float f[VEC];
            unpack(xv[i], f);
#pragma unroll
            for (int k = 0; k < VEC; ++k) sum = fmaf(f[k], f[k], sum);
        }
        keep_packed(xv[i]);
    }
    /// [head-load]

    sum = head_sum<G>(sum, partials, bank);
    // rsqrtf (within 2 ulp) rather than 1 / sqrtf: two correctly rounded operations, each
    // with a slow path the compiler branches around, on the way from the loads to the stores.
    const float inv_rms = rsqrtf(sum * a.inv_dim + a.eps);

    if (active) {
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (idx < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                if constexpr (EARLY_W) {
                    unpack(wv[i], g);
                } else {
                    unpack(w[idx], g);
                }
#pragma unroll
                for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
                yr[idx] = pack<T, VEC>(f);
            }
        }
    }
}

/**
 * Heads kept in registers. G threads own a head. G ≤ 32: BLOCK/G heads per block, reduced
 * with shuffles only. G > 32 (heads longer than 128 vectors): one head per block.
 * ONE_GROUP: the grid has a block for every group of heads and every head index fits 32
 * bits, so a block normalises its heads and exits; otherwise it walks the heads.
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool EARLY_W, bool ONE_GROUP>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) qk_rows_kernel(Args<T> a) {
    static_assert(G <= kWarpSize ? BLOCK % G == 0 : BLOCK == G, "a head group is a sub-warp or the block");
    constexpr int kRowsPerBlock = BLOCK / G;
    __shared__ Partials<G> partials;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
    if constexpr (ONE_GROUP) {
        normalise_head<T, VEC, G, ITERS, BLOCK, EARLY_W, true>(a, first + group, lane, partials, 0);
    } else {
        int bank = 0;
        for (int64_t row0 = first; row0 < a.rows; row0 += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
            normalise_head<T, VEC, G, ITERS, BLOCK, EARLY_W, false>(a, row0 + group, lane, partials, bank);
            bank ^= 1;
        }
    }
}

/// Heads too long for registers (only at narrow widths, head_dim above 16384): one block per
/// head, the sum streamed first, the head read again (mostly from L2) for the output.
/// Nothing is written before the second pass, so y == x is still safe.
template <typename T, int VEC, int BLOCK>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) qk_stream_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kUnroll = 4;
    __shared__ Partials<BLOCK> partials;
    const int nvec = a.head_dim / VEC;
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        int64_t x_off, y_off;
        head_offsets<false>(a, row, x_off, y_off);
        const P* xr = reinterpret_cast<const P*>(a.x + x_off);
        P* yr = reinterpret_cast<P*>(a.y + y_off);
        float sum = 0.0f;
        for (int base = threadIdx.x; base < nvec; base += kUnroll * BLOCK) {
            P xv[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
                if (base + u * BLOCK < nvec) xv[u] = xr[base + u * BLOCK];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if (base + u * BLOCK < nvec) {
                    float f[VEC];
                    unpack(xv[u], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) sum = fmaf(f[k], f[k], sum);
                }
            }
        }
        // The barrier inside block_sum also orders every first-pass read before any write.
        sum = block_sum<BLOCK>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = rsqrtf(sum * a.inv_dim + a.eps);
#pragma unroll 4
        for (int idx = threadIdx.x; idx < nvec; idx += BLOCK) {
            float f[VEC], g[VEC];
            unpack(xr[idx], f);
            unpack(w[idx], g);
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
            yr[idx] = pack<T, VEC>(f);
        }
    }
}

/// One block per group of heads; the hardware balances the tail.
inline int grid_for(int64_t groups) { return static_cast<int>(groups < kMaxGrid ? groups : kMaxGrid); }

template <typename T, int VEC, int G, int ITERS>
cudaError_t launch_rows(const Args<T>& a, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    // The weight joins x in flight when that costs at most 16 registers per thread
    // (8 in 1024-thread blocks, which get only 64 registers per thread).
    constexpr bool kEarlyWeight = ITERS * VEC * sizeof(T) <= (kBlock >= 1024 ? 32 : 64);
    const int64_t groups = (a.rows + kRowsPerBlock - 1) / kRowsPerBlock;
    if (a.rows <= 0xffffffffll && groups <= kMaxGrid) {
        qk_rows_kernel<T, VEC, G, ITERS, kBlock, kEarlyWeight, true>
            <<<static_cast<unsigned>(groups), kBlock, 0, stream>>>(a);
    } else {
        qk_rows_kernel<T, VEC, G, ITERS, kBlock, kEarlyWeight, false><<<grid_for(groups), kBlock, 0, stream>>>(a);
    }
    return cudaGetLastError();
}

/// [launch-shape]
/// Lanes per head from head_dim in vectors: one vector per lane up to a full warp. At
/// 16-byte width: head_dim 64 → 8 lanes, 128 → 16, 256 → 32; a 256-thread block holds
/// 32, 16 or 8 heads. Measured on the q slice of a qkv tensor, one vector per lane beats
/// 4 lanes with 4 vectors each: more loads in flight per head, and the per-head work
/// (index, reduction, scale) is spread over more threads.
template <typename T, int VEC>
cudaError_t launch_width(const Args<T>& a, cudaStream_t stream) {
    const int nvec = a.head_dim / VEC;
    if (nvec <= 2) return launch_rows<T, VEC, 2, 1>(a, stream);
    if (nvec <= 4) return launch_rows<T, VEC, 4, 1>(a, stream);
    if (nvec <= 8) return launch_rows<T, VEC, 8, 1>(a, stream);
    if (nvec <= 16) return launch_rows<T, VEC, 16, 1>(a, stream);
    if (nvec <= 32) return launch_rows<T, VEC, 32, 1>(a, stream);
    if (nvec <= 64) return launch_rows<T, VEC, 32, 2>(a, stream);
    if (nvec <= 128) return launch_rows<T, VEC, 32, 4>(a, stream);
    // Long heads (rare): lesson 4's shapes; narrow accesses keep 16 loads in flight.
    constexpr int kI = VEC * sizeof(T) >= 8 ? 8 : 16;
    if (nvec <= 32 * kI) return launch_rows<T, VEC, 32, kI>(a, stream);
    if (nvec <= 64 * kI) return launch_rows<T, VEC, 64, kI>(a, stream);
    if (nvec <= 128 * kI) return launch_rows<T, VEC, 128, kI>(a, stream);
    if (nvec <= 256 * kI) return launch_rows<T, VEC, 256, kI>(a, stream);
    if (nvec <= 512 * kI) return launch_rows<T, VEC, 512, kI>(a, stream);
    if (nvec <= 1024 * kI) return launch_rows<T, VEC, 1024, kI>(a, stream);
    if constexpr (kMaxHeadDim / VEC > 1024 * kI) {
        constexpr int kBlock = 1024;
        qk_stream_kernel<T, VEC, kBlock><<<grid_for(a.rows), kBlock, 0, stream>>>(a);
        return cudaGetLastError();
    }
    return cudaErrorInvalidValue;  // unreachable: head_dim ≤ kMaxHeadDim
}
/// [launch-shape]

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

/**
 * @brief Per-head RMSNorm over a [tokens, heads, head_dim] view with token and head strides.
 *
 * For every token t and head h, with v = x[t, h, :]:
 * y[t, h, c] = v[c] · rsqrt(mean(v²) + eps) · weight[c], accumulated in fp32.
 *
 * @tparam T element type of x, weight and y: `float`, `__half` or `__nv_bfloat16`
 * @param[in]  x               input; head (t, h) starts at x + t·x_token_stride + h·x_head_stride
 * @param[in]  x_token_stride  elements between consecutive tokens of x
 *                             ((heads + 2·kv_heads)·head_dim for q inside a fused qkv tensor)
 * @param[in]  x_head_stride   elements between consecutive heads of x (head_dim when packed)
 * @param[in]  weight          head_dim scale factors, shared by every head
 * @param[out] y               output; either exactly x (same pointer and strides: in place)
 *                             or not overlapping it. Only the heads' elements are written.
 * @param[in]  y_token_stride  elements between consecutive tokens of y
 * @param[in]  y_head_stride   elements between consecutive heads of y
 * @param[in]  tokens          number of tokens; 0 launches nothing
 * @param[in]  heads           heads per token; 0 launches nothing
 * @param[in]  head_dim        elements per head, 1 to 65536
 * @param[in]  eps             added to the mean square inside the square root
 * @param[in]  stream          the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for negative
 *         tokens or heads, or head_dim outside 1..65536
 *
 * Performance: 2·tokens·heads·head_dim·sizeof(T) bytes plus the weight. Each head is a
 * few hundred bytes, so the work is in many small rows: a 128-wide fp16 head is 16 lanes
 * with one 16-byte load each, and a 256-thread block normalises 16 heads. The q slice of
 * a qkv tensor is contiguous within a token (heads·head_dim elements) and skips the k and
 * v parts between tokens, which costs DRAM almost nothing: on an H100 the q slice of
 * 32768 tokens (32 heads of 128, bf16, out of place) runs at 98% of a large
 * device-to-device copy, a contiguous tensor at 99%, in place at 96%.
 */
template <typename T>
cudaError_t qk_rmsnorm(const T* x, int64_t x_token_stride, int64_t x_head_stride, const T* weight, T* y,
                       int64_t y_token_stride, int64_t y_head_stride, int64_t tokens, int64_t heads,
                       int64_t head_dim, float eps, cudaStream_t stream) {
    if (tokens < 0 || heads < 0 || head_dim < 1 || head_dim > kMaxHeadDim) return cudaErrorInvalidValue;
    if (tokens == 0 || heads == 0) return cudaSuccess;

    /// [vector-width]
    // A width must divide head_dim, suit x, y and weight, and keep every head aligned:
    // the token strides matter when there is a second token, the head strides when
    // there is a second head.
    auto fits = [&](int w) {
        const int bytes = w * static_cast<int>(sizeof(T));
        return head_dim % w == 0 && aligned_to(x, bytes) && aligned_to(weight, bytes) && aligned_to(y, bytes) &&
               (tokens == 1 || (x_token_stride % w == 0 && y_token_stride % w == 0)) &&
               (heads == 1 || (x_head_stride % w == 0 && y_head_stride % w == 0));
    };
    int vec = 16 / static_cast<int>(sizeof(T));
    while (vec > 1 && !fits(vec)) vec /= 2;
    /// [vector-width]

    const int64_t rows = tokens * heads;
    const Args<T> a{x,
                    x_token_stride,
                    x_head_stride,
                    weight,
                    y,
                    y_token_stride,
                    y_head_stride,
                    rows,
                    heads,
                    static_cast<int>(head_dim),
                    eps,
                    1.0f / static_cast<float>(head_dim),
                    make_divider(rows <= 0xffffffffll ? static_cast<uint32_t>(heads) : 1u)};
    if constexpr (sizeof(T) == 2) {
        if (vec == 8) return launch_width<T, 8>(a, stream);
    }
    if (vec == 4) return launch_width<T, 4>(a, stream);
    if (vec == 2) return launch_width<T, 2>(a, stream);
    return launch_width<T, 1>(a, stream);
}

}  // namespace workbook::lesson6
