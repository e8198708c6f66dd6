/**
 * @file rmsnorm_vectorized.cu
 * @brief Lesson 4 reference: vectorized RMSNorm for fp32, fp16 and bf16 at the copy bandwidth.
 *
 * What it shows:
 *  - the vector width: up to 16 bytes per access, `gcd(16 / sizeof(T), cols)`, cut down
 *    at run time to what every pointer and every row stride really allows, so a tensor
 *    that starts one element past an aligned address still runs (at a narrower width);
 *  - a launch shape that follows cols: a few lanes per row and many rows per block for
 *    short rows (at 256, 512 and 1024 fp16/bf16 columns, one-warp blocks whose lanes each
 *    hold 4, 2 or 2 rows), one warp per row in the middle, one block per row for long rows, and for
 *    many long 16-bit rows a block of 2 vectors per thread held to 32 registers, so the SM
 *    runs its full 2048 threads;
 *  - the row held in registers between the sum of squares and the scaling, so x is read
 *    from memory exactly once; or, for rows of 4097 to 16384 16-bit columns, read twice
 *    with an L2 eviction priority (inline PTX), so the second read finds it in L2 and DRAM
 *    still moves it once;
 *  - a plan per GPU: the read twice pays on an H100, not on an H200, whose DRAM is 1.4 times
 *    as fast beside the same L2; the device's memory clock and bus width pick the plan;
 *  - rows whose starts are not 16-byte aligned (odd cols, a view one element off) peeled: the
 *    few elements before a row's first 16-byte boundary and after its last whole vector one at
 *    a time, the rest 16 bytes at a time, the weight shifted into place for each row;
 *  - fp32 accumulation whatever T is, pairwise 16-bit conversions, and 64-bit offsets.
 *
 * What it leaves out: rows longer than a block can hold in registers (only fp32 rows of
 * more than 32768 cols, or 16-bit rows at a narrow width) are read twice, the second time
 * mostly from L2; lesson 8 keeps such rows on chip with a thread-block cluster.
 * Programmatic dependent launch is lesson 7.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace workbook::lesson4 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxCols = 65536;
/// Largest grid.x a launch accepts; kernels walk the rows, so any rows count fits.
constexpr int64_t kMaxGrid = 2147483647;

/// Minimum resident blocks for __launch_bounds__. 0 leaves the choice to the compiler;
/// for 1024-thread blocks it would squeeze registers to fit two blocks per SM and spill.
constexpr int min_blocks(int block) { return block >= 1024 ? 1 : 0; }

/// Up to this many rows the launch is latency-bound (fewer rows than two per SM).
constexpr int64_t kFewRows = 256;

/// Everything a kernel needs about one call, passed by value.
template <typename T>
struct Args {
    const T* x;
    int64_t x_row_stride;
    const T* weight;
    T* y;
    int64_t y_row_stride;
    int64_t rows;
    int cols;
    float eps;
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

/// VEC elements that move as one access; the alignment makes the compiler emit one
/// 2-, 4-, 8- or 16-byte load or store instead of VEC scalar ones.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// fp32 copies of a pack's elements. 16-bit pairs convert as pairs: fewer instructions
/// per byte, which matters once the loads are as wide as they can be.
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
        // bf16 is the top half of an fp32: a shift and a mask per pair. Written out, they
        // leave the pack packed until each value is used; with the conversion intrinsic the
        // compiler keeps fp32 copies, and the two-pass kernel below spills at 32 registers.
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const unsigned bits = *reinterpret_cast<const unsigned*>(&p.v[k]);
            f[k] = __uint_as_float(bits << 16);
            f[k + 1] = __uint_as_float(bits & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
    }
}

/// Round VEC fp32 values to T, two at a time for 16-bit types (one instruction per pair).
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

/// Tells the compiler the packed row may have changed, so it converts the row to fp32
/// again for the output instead of keeping the fp32 copies from the sum alive: for a
/// 16-bit row that is twice the registers, and the longest rows would spill. No code.
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

/// [l2-priority]
/// Which lines the L2 should give up first when it needs room.
enum class L2Priority { kEvictLast, kEvictFirst };

/// One 16-byte load that carries an L2 eviction priority (PTX `createpolicy` and
/// `.L2::cache_hint`; CUDA C++ has no intrinsic for it). kEvictLast: this line will be read
/// again soon, keep it over other lines; kEvictFirst: this is its last read, drop it first.
template <L2Priority kPriority, typename P>
__device__ __forceinline__ P load_l2(const P* p) {
    static_assert(sizeof(P) == 16, "one 16-byte access");
    unsigned long long policy;
    if constexpr (kPriority == L2Priority::kEvictLast) {
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    } else {
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    }
    uint4 v;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
    return *reinterpret_cast<const P*>(&v);
}
/// [l2-priority]

/// [row-sum]
/// Sum over the G consecutive lanes that share a row (G a power of two, at most 32).
/// xor offsets below G never leave the group, so several rows reduce in one warp at once.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// Sum over a whole block of BLOCK threads; every thread gets the total.
/// `partials` has two banks of BLOCK/32 slots used on alternate rows, so a warp that
/// races ahead to the next row cannot overwrite a slot another warp has not read yet;
/// one barrier per row is then enough.
template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float (*partials)[BLOCK / kWarpSize], int bank) {
    constexpr int kWarps = BLOCK / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    v = group_sum<kWarpSize>(v);
    if (lane == 0) partials[bank][warp] = v;
    __syncthreads();
    // Every warp finishes the sum itself: no second barrier, no broadcast slot.
    const float total = lane < kWarps ? partials[bank][lane] : 0.0f;
    return group_sum<kWarpSize>(total);
}
/// [row-sum]

/// Slots for block_sum; a sub-warp group needs none (one dummy slot keeps the type valid).
template <int G>
using Partials = float[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

/// Sum over the G threads of a row group: shuffles inside a warp, shared memory across warps.
template <int G>
__device__ __forceinline__ float row_sum(float v, Partials<G>& partials, int bank) {
    if constexpr (G <= kWarpSize) {
        return group_sum<G>(v);
    } else {
        return block_sum<G>(v, partials, bank);
    }
}

/// [peel]
/// Elements before the first 16-byte boundary of a row that starts at `row`: 0 when the row is
/// aligned, else up to VEC - 1 (never more than cols). A row of odd length, or a tensor one
/// element off, reads these few one at a time, then whole aligned vectors, then the rest.
template <typename T, int VEC>
__device__ __forceinline__ int peel_count(const T* row, int cols) {
    constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
    const int past = static_cast<int>(reinterpret_cast<uintptr_t>(row) % kBytes) / static_cast<int>(sizeof(T));
    const int head = past == 0 ? 0 : VEC - past;
    return head < cols ? head : cols;
}

/// Elements by which `p` sits past the 16-byte boundary before it.
template <typename T, int VEC>
__device__ __forceinline__ int skew_of(const T* p) {
    return static_cast<int>(reinterpret_cast<uintptr_t>(p) % (VEC * sizeof(T))) / static_cast<int>(sizeof(T));
}

/// The VEC weight elements that line up with vector `idx` of a peeled row, whose weight starts
/// `skew` elements past the aligned `base` and ends before element `end` of it. The row's own
/// alignment decided where its vectors start, so the weight's may differ by `skew`: then the
/// two aligned 16-byte loads that cover the VEC elements, shifted into place. Both hold wanted
/// elements, so neither leaves the weight's 16-byte blocks, and the second is read element by
/// element when its block runs past the weight's end.
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_skewed(const T* base, int idx, int skew, int end) {
    using P = Pack<T, VEC>;
    static_assert(sizeof(P) == 16, "a peeled row moves whole 16-byte vectors");
    const P* chunks = reinterpret_cast<const P*>(base);
    if (skew == 0) return chunks[idx];
    P lo = chunks[idx], hi;
    if ((idx + 2) * VEC <= end) {
        hi = chunks[idx + 1];
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) hi.v[k] = k < skew ? base[(idx + 1) * VEC + k] : lo.v[k];
    }
    const uint4 a = *reinterpret_cast<const uint4*>(&lo);
    const uint4 b = *reinterpret_cast<const uint4*>(&hi);
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    // A shift by `bytes` over the 32 bytes in three steps of constant indices (a run-time index
    // would put w in local memory): two words, one word, then half a word.
    const int bytes = skew * static_cast<int>(sizeof(T));
    unsigned u[6], v[5];
#pragma unroll
    for (int j = 0; j < 6; ++j) u[j] = bytes & 8 ? w[j + 2] : w[j];
#pragma unroll
    for (int j = 0; j < 5; ++j) v[j] = bytes & 4 ? u[j + 1] : u[j];
    uint4 out;
    unsigned* o = reinterpret_cast<unsigned*>(&out);
#pragma unroll
    for (int j = 0; j < 4; ++j) o[j] = bytes & 2 ? (v[j] >> 16) | (v[j + 1] << 16) : v[j];
    return *reinterpret_cast<const P*>(&out);
}
/// [peel]

/**
 * Rows whose starts are not all 16-byte aligned, peeled (x and y misaligned alike in every row):
 * one row per block of G threads at a time, each thread holding ITERS 16-byte vectors of it, lane
 * l < head also element l before them and lane l < tail element l after the last whole vector.
 * Before it loads the row, each thread shifts its weight vectors into place for the row's offset
 * and keeps them in dynamic shared memory (its own slots: no barrier), so the shift's registers
 * are free again by the time the row's are needed, and the row reads them with one aligned
 * 16-byte load each. RESIDENT (a grid of whole periods, launch_peeled_block): the rows a block
 * walks share one offset, so it shifts the weight only when the offset changes, once.
 */
template <typename T, int G, int ITERS, int MIN_BLOCKS, bool RESIDENT = false>
__global__ void __launch_bounds__(G, MIN_BLOCKS) rmsnorm_peeled_kernel(Args<T> a) {
    constexpr int VEC = 16 / static_cast<int>(sizeof(T));
    using P = Pack<T, VEC>;
    __shared__ Partials<G> partials;
    extern __shared__ uint4 weight_raw[];  // ITERS · G vectors
    P* weight = reinterpret_cast<P*>(weight_raw);
    const int lane = threadIdx.x;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    int bank = 0;
    int staged = -1;  // RESIDENT: the head whose shifted weight the slots hold
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const T* xrow = a.x + row * a.x_row_stride;
        T* yrow = a.y + row * a.y_row_stride;
        const int head = peel_count<T, VEC>(xrow, a.cols);
        const int nvec = (a.cols - head) / VEC;
        const int tail = a.cols - head - nvec * VEC;
        const int tail_col = head + nvec * VEC + lane;
        // A block a row shifts unconditionally: behind a condition the shift's loads no longer
        // overlap the row's (0.55-0.71x at 1023 to 16383 columns on an H200).
        if (!RESIDENT || head != staged) {
            staged = head;
            const int skew = skew_of<T, VEC>(a.weight + head);
            const T* wbase = a.weight + head - skew;
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) weight[idx] = load_skewed<T, VEC>(wbase, idx, skew, skew + a.cols - head);
            }
        }
        const P* __restrict__ xr = reinterpret_cast<const P*>(xrow + head);
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i)
            if (lane + i * G < nvec) xv[i] = xr[lane + i * G];
        const float xh = lane < head ? to_float(xrow[lane]) : 0.0f;
        const float xt = lane < tail ? to_float(xrow[tail_col]) : 0.0f;
        float sumsq = fmaf(xh, xh, xt * xt);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (lane + i * G < nvec) {
                float f[VEC];
                unpack(xv[i], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) sumsq = fmaf(f[k], f[k], sumsq);
            }
            keep_packed(xv[i]);
        }
        sumsq = row_sum<G>(sumsq, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sumsq * inv_cols + a.eps);
        if (lane < head) yrow[lane] = from_float<T>(xh * inv_rms * to_float(a.weight[lane]));
        if (lane < tail) yrow[tail_col] = from_float<T>(xt * inv_rms * to_float(a.weight[tail_col]));
        P* __restrict__ yr = reinterpret_cast<P*>(yrow + head);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (idx < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                unpack(weight[idx], g);
#pragma unroll
                for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
                yr[idx] = pack<T, VEC>(f);
            }
        }
    }
}

/**
 * Rows kept in registers. A row group of G threads owns a row; thread `lane` of the
 * group owns vectors lane, lane + G, ..., lane + (ITERS-1)·G of it, so each warp-wide
 * access is contiguous. G ≤ 32: BLOCK/G rows per block, reduced with shuffles.
 * G > 32: BLOCK == G, one row per block, reduced through shared memory.
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool EARLY_W, int MIN_BLOCKS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) rmsnorm_rows_kernel(Args<T> a) {
    static_assert(G <= kWarpSize ? BLOCK % G == 0 : BLOCK == G, "a row group is a sub-warp or the block");
    using P = Pack<T, VEC>;
    constexpr int kRowsPerBlock = BLOCK / G;
    __shared__ Partials<G> partials;

    const int nvec = a.cols / VEC;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);

    int bank = 0;
    // Every thread of the block runs the same number of iterations (the test is on the
    // block's first row), so the shuffles and barriers below are never divergent.
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < a.rows;
        // 64-bit offsets: rows × stride passes 2^31 elements on large tensors.
        const int64_t r = active ? row : 0;
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + r * a.x_row_stride);
        P* __restrict__ yr = reinterpret_cast<P*>(a.y + r * a.y_row_stride);

        /// [vector-load]
        // All loads first: ITERS independent loads of up to 16 bytes in flight per thread
        // hide the memory latency; the row then stays in registers for the second pass.
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) xv[i] = xr[idx];
        }
        // EARLY_W: the weight is loaded with x, so its latency hides under the same wait;
        // otherwise it is read after the reduction (from L1/L2: every row shares it).
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
        /// [vector-load]

        sum = row_sum<G>(sum, partials, bank);
        bank ^= 1;
        // Once per row: the IEEE divide and square root cost nothing measurable here.
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);

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
}

/// [decode]
/// Decode batches (at most kFewRows rows): one row a block of BLOCK threads, ITERS vectors a
/// thread, no row loop. A few blocks on an idle GPU take as long as one block's path from launch
/// to its last store, so the path is kept short: x and the weight are both loaded first,
/// through plain global loads (the pointers are not `__restrict__`, so the compiler does not use
/// the read-only path, which measured 0.05-0.1 us slower here), and the inverse RMS is one
/// `rsqrtf` (at most 2 ulp) rather than a divide and a square root. Between the barrier and the
/// stores there is only what needs the inverse RMS: x and the weight are in fp32 registers
/// before it, 1/cols is computed while the loads are in flight, and every thread adds the warps'
/// partials itself from 16-byte shared loads instead of a second round of shuffles. Measured on
/// an H100 against rmsnorm_rows_kernel, which it replaces here (one process, L2 flushed, two runs
/// of three rounds): level to 0.3 us faster at 1, 16 and 128 rows of 4096 and 7168 columns; the
/// short tail, with 256 threads of two vectors at 4096 columns, another 0-0.16 us at 1 to 256
/// rows of 4096 (performance.md, "Decode batches: the path after the barrier").
template <typename T, int VEC, int BLOCK, int ITERS>
__global__ void __launch_bounds__(BLOCK) rmsnorm_decode_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kWarps = BLOCK / kWarpSize;
    constexpr int kSlots = (kWarps + 3) / 4 * 4;
    __shared__ __align__(16) float partials[kSlots];
    const int nvec = a.cols / VEC;
    const P* xr = reinterpret_cast<const P*>(a.x + blockIdx.x * a.x_row_stride);
    P* yr = reinterpret_cast<P*>(a.y + blockIdx.x * a.y_row_stride);
    const P* w = reinterpret_cast<const P*>(a.weight);

    P xv[ITERS], wv[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) xv[i] = xr[idx];
    }
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) wv[i] = w[idx];
    }
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    float sum = 0.0f;
    float xf[ITERS][VEC], gf[ITERS][VEC];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        if (threadIdx.x + i * BLOCK < nvec) {
            unpack(xv[i], xf[i]);
            unpack(wv[i], gf[i]);
#pragma unroll
            for (int k = 0; k < VEC; ++k) sum = fmaf(xf[i][k], xf[i][k], sum);
        }
    }
    // One row a block and no second row: a single bank of partials and one barrier. The slots
    // past the last warp's are zeroed, so every thread reads whole float4s and adds them alike.
    const int lane = threadIdx.x % kWarpSize;
    sum = group_sum<kWarpSize>(sum);
    if (lane == 0) partials[threadIdx.x / kWarpSize] = sum;
    if (kSlots > kWarps && threadIdx.x < kSlots - kWarps) partials[kWarps + threadIdx.x] = 0.0f;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < kSlots; k += 4) {
        const float4 q = *reinterpret_cast<const float4*>(&partials[k]);
        total += (q.x + q.y) + (q.z + q.w);
    }
    const float inv_rms = rsqrtf(total * inv_cols + a.eps);

#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) {
            float f[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] = xf[i][k] * inv_rms * gf[i][k];
            yr[idx] = pack<T, VEC>(f);
        }
    }
}
/// [decode]

/// [two-pass-l2]
/// Many long 16-bit rows (4097 to 16384 columns): one row per block of BLOCK threads, read
/// twice, 2 vectors per thread at a time, 32 registers, the SM's full 2048 threads (1536 at
/// 8192 columns, where 3 blocks an SM measured faster than 4). The first
/// read asks the L2 to keep the row (evict-last) and only sums squares; the second finds it
/// there, marked evict-first now that it is done with, and writes y. DRAM still moves each
/// byte once. Measured on an H100 against the register-held row at full occupancy, both
/// dtypes, both orders, every implementation starting from a cleared L2: +0.3-0.5% at 5120
/// columns and +0.6-3% from 6144 to 16384 (tensors of 128 MiB to 1 GiB), level with
/// `torch.compile` (which runs the same scheme) from 6144 on; at 4096 columns 0-0.5% slower,
/// so those keep the row in registers. Without the hints the same kernel is up to 4.5%
/// slower: the row is gone from L2 when it is read again.
template <typename T, int VEC, int BLOCK, int RESIDENT>
__global__ void __launch_bounds__(BLOCK, RESIDENT / BLOCK) rmsnorm_two_pass_l2_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kStep = 2;  // vectors per thread in flight
    __shared__ Partials<BLOCK> partials;
    const int nvec = a.cols / VEC;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + row * a.x_row_stride);
        P* __restrict__ yr = reinterpret_cast<P*>(a.y + row * a.y_row_stride);
        float sum = 0.0f;
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += kStep * BLOCK) {
            P xv[kStep];
#pragma unroll
            for (int u = 0; u < kStep; ++u)
                if (base + u * BLOCK < nvec) xv[u] = load_l2<L2Priority::kEvictLast>(xr + base + u * BLOCK);
#pragma unroll
            for (int u = 0; u < kStep; ++u) {
                if (base + u * BLOCK < nvec) {
                    float f[VEC];
                    unpack(xv[u], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) sum = fmaf(f[k], f[k], sum);
                }
            }
        }
        sum = block_sum<BLOCK>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += kStep * BLOCK) {
            P xv[kStep];
#pragma unroll
            for (int u = 0; u < kStep; ++u)
                if (base + u * BLOCK < nvec) xv[u] = load_l2<L2Priority::kEvictFirst>(xr + base + u * BLOCK);
#pragma unroll
            for (int u = 0; u < kStep; ++u) {
                const int idx = base + u * BLOCK;
                if (idx < nvec) {
                    float f[VEC], g[VEC];
                    unpack(xv[u], f);
                    // One 16-byte read-only load: read as a Pack the compiler keeps more
                    // registers live here and spills at 32.
                    const uint4 wq = __ldg(reinterpret_cast<const uint4*>(w + idx));
                    unpack(*reinterpret_cast<const P*>(&wq), g);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
                    yr[idx] = pack<T, VEC>(f);
                }
            }
        }
    }
}
/// [two-pass-l2]

/// [two-pass-exact]
/// Rows of exactly 2 · BLOCK 16-bit vectors (BLOCK a whole number of warps), one a block, on fast
/// memory (an H200): the row read twice through the L2 as rmsnorm_two_pass_l2_kernel does, with
/// no row loop, no step loop and no bounds test. Each thread issues its two loads of x, then
/// after the reduction its two loads of x again and its two of the weight, all before the first
/// store: the general kernels issue each vector's weight load after the previous vector's store,
/// and with that code in them 32 registers cannot hold both loads. Measured on an H200 against
/// the register-held row at full occupancy (one process, both dtypes, two rounds): 2.2-2.7%
/// faster at 32768 × 6144 and 7168, 3-7% at 8192 columns (4096 to 16384 rows), level with
/// `torch.compile`, whose kernel reads these rows the same way; held in registers with the same
/// loads batched, level with the reference (performance.md, "On an H200").
template <typename T, int VEC, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 2048 / BLOCK) rmsnorm_two_pass_exact_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    static_assert(BLOCK % kWarpSize == 0, "the block reduction takes whole warps");
    __shared__ Partials<BLOCK> partials;
    const int64_t row = blockIdx.x;  // the grid is the rows
    const P* xr = reinterpret_cast<const P*>(a.x + row * a.x_row_stride) + threadIdx.x;
    P* yr = reinterpret_cast<P*>(a.y + row * a.y_row_stride) + threadIdx.x;
    const uint4* w = reinterpret_cast<const uint4*>(a.weight) + threadIdx.x;
    P x0 = load_l2<L2Priority::kEvictLast>(xr);
    P x1 = load_l2<L2Priority::kEvictLast>(xr + BLOCK);
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    float sum = 0.0f;
    {
        float f[VEC];
        unpack(x0, f);
#pragma unroll
        for (int k = 0; k < VEC; ++k) sum = fmaf(f[k], f[k], sum);
        unpack(x1, f);
#pragma unroll
        for (int k = 0; k < VEC; ++k) sum = fmaf(f[k], f[k], sum);
    }
    sum = block_sum<BLOCK>(sum, partials, 0);  // one row a block: one bank is enough
    const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
    x0 = load_l2<L2Priority::kEvictFirst>(xr);
    x1 = load_l2<L2Priority::kEvictFirst>(xr + BLOCK);
    const uint4 w0 = __ldg(w), w1 = __ldg(w + BLOCK);
    float f[VEC], g[VEC];
    unpack(x0, f);
    unpack(*reinterpret_cast<const P*>(&w0), g);
#pragma unroll
    for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
    yr[0] = pack<T, VEC>(f);
    unpack(x1, f);
    unpack(*reinterpret_cast<const P*>(&w1), g);
#pragma unroll
    for (int k = 0; k < VEC; ++k) f[k] = f[k] * inv_rms * g[k];
    yr[BLOCK] = pack<T, VEC>(f);
}
/// [two-pass-exact]

/**
 * Short rows at full width (32·ITERS vectors, 256, 512 or 1024 fp16/bf16 columns): one-warp
 * blocks, each lane owning vectors lane and lane + 32 (ITERS of them) of R consecutive
 * rows. The R rows' loads are all in flight together, the weight is read and converted
 * once for R rows, and the R sums reduce in interleaved shuffles.
 *
 * CONTIG: rows of exactly 32·ITERS·VEC elements back to back, and every offset below 2^31
 * (the launcher checks both). The row length, the stride and 1/cols are then compile-time
 * constants and the offsets 32-bit: a quarter fewer instructions, which this short-lived
 * kernel feels (measured 1–3% at 256 columns).
 */
template <typename T, int VEC, int ITERS, int R, bool CONTIG>
__global__ void __launch_bounds__(kWarpSize) rmsnorm_warp_rows_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    using Index = std::conditional_t<CONTIG, int, int64_t>;
    constexpr int kCols = kWarpSize * ITERS * VEC;
    const int lane = threadIdx.x;
    const Index rows = static_cast<Index>(a.rows);
    const Index x_stride = CONTIG ? kCols : static_cast<Index>(a.x_row_stride);
    const Index y_stride = CONTIG ? kCols : static_cast<Index>(a.y_row_stride);
    const float inv_cols = CONTIG ? 1.0f / kCols : 1.0f / static_cast<float>(a.cols);
    const T* __restrict__ x = a.x;
    T* __restrict__ y = a.y;
    const Index first = static_cast<Index>(blockIdx.x) * R;

    P xv[R][ITERS];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const Index row = first + r;
#pragma unroll
        for (int i = 0; i < ITERS; ++i)
            if (row < rows) xv[r][i] = reinterpret_cast<const P*>(x + row * x_stride)[lane + i * kWarpSize];
    }
    // After the loads of x, so its latency hides under theirs.
    float g[ITERS][VEC];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const P w = reinterpret_cast<const P*>(a.weight)[lane + i * kWarpSize];  // one 16-byte load
        unpack(w, g[i]);
    }

    float xf[R][ITERS][VEC], sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        sum[r] = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            unpack(xv[r][i], xf[r][i]);
#pragma unroll
            for (int k = 0; k < VEC; ++k) sum[r] = fmaf(xf[r][i][k], xf[r][i][k], sum[r]);
        }
    }
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
#pragma unroll
        for (int r = 0; r < R; ++r) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], offset);

#pragma unroll
    for (int r = 0; r < R; ++r) {
        const Index row = first + r;
        // rsqrtf: within 2 ulp, far inside the tolerance, and the form this path was timed with.
        const float inv_rms = rsqrtf(sum[r] * inv_cols + a.eps);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            float f[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] = xf[r][i][k] * inv_rms * g[i][k];
            const P out = pack<T, VEC>(f);
            if (row < rows) reinterpret_cast<P*>(y + row * y_stride)[lane + i * kWarpSize] = out;
        }
    }
}

/// One launch of rmsnorm_warp_rows_kernel (the caller checks the grid fits), contiguous
/// when the rows allow it.
template <typename T, int VEC, int ITERS, int R>
cudaError_t launch_warp_rows(const Args<T>& a, cudaStream_t stream) {
    constexpr int64_t kCols = kWarpSize * ITERS * VEC;
    const int64_t blocks = (a.rows + R - 1) / R;
    // The last block's rows past the end still form addresses: count them in the 2^31 bound.
    const bool contig = a.x_row_stride == kCols && a.y_row_stride == kCols && (blocks * R) * kCols < (int64_t{1} << 31);
    if (contig) {
        rmsnorm_warp_rows_kernel<T, VEC, ITERS, R, true><<<static_cast<int>(blocks), kWarpSize, 0, stream>>>(a);
    } else {
        rmsnorm_warp_rows_kernel<T, VEC, ITERS, R, false><<<static_cast<int>(blocks), kWarpSize, 0, stream>>>(a);
    }
    return cudaGetLastError();
}

/// Rows too long for registers: one block per row, the sum streamed in a first pass and
/// the row read again (mostly from L2, where the first pass just left it) in the second.
template <typename T, int VEC, int BLOCK>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) rmsnorm_stream_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kUnroll = 4;
    __shared__ Partials<BLOCK> partials;
    const int nvec = a.cols / VEC;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + row * a.x_row_stride);
        P* __restrict__ yr = reinterpret_cast<P*>(a.y + row * a.y_row_stride);
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
        sum = block_sum<BLOCK>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
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

/// One block per row group. The hardware hands out blocks as others finish, which
/// balances the tail better than a grid sized to the SM count.
inline int grid_for(int64_t row_groups) { return static_cast<int>(row_groups < kMaxGrid ? row_groups : kMaxGrid); }

template <typename T, int VEC, int G, int ITERS>
cudaError_t launch_rows(const Args<T>& a, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    // The weight joins x in flight when that costs at most 16 registers per thread
    // (8 in 1024-thread blocks, which get only 64 registers per thread).
    constexpr bool kEarlyWeight = ITERS * VEC * sizeof(T) <= (kBlock >= 1024 ? 32 : 64);
    rmsnorm_rows_kernel<T, VEC, G, ITERS, kBlock, kEarlyWeight, min_blocks(kBlock)>
        <<<grid_for((a.rows + kRowsPerBlock - 1) / kRowsPerBlock), kBlock, 0, stream>>>(a);
    return cudaGetLastError();
}

/// A decode batch: one block a row (rows ≤ kFewRows, so the grid is small).
template <typename T, int VEC, int BLOCK, int ITERS>
cudaError_t launch_decode(const Args<T>& a, cudaStream_t stream) {
    rmsnorm_decode_kernel<T, VEC, BLOCK, ITERS><<<static_cast<int>(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// [full-occupancy]
/// One row per block of G threads (128 to 1024), each holding only ITERS = 2 vectors, with
/// the compiler held to 32 registers per thread (`__launch_bounds__(G, 2048 / G)`), so the
/// SM runs its full 2048 threads. The weight is read after the reduction, not with x: early,
/// it would not fit in 32 registers.
template <typename T, int VEC, int G>
cudaError_t launch_full_occupancy(const Args<T>& a, cudaStream_t stream) {
    constexpr int kMaxThreadsPerSm = 2048;
    rmsnorm_rows_kernel<T, VEC, G, 2, G, false, kMaxThreadsPerSm / G><<<grid_for(a.rows), G, 0, stream>>>(a);
    return cudaGetLastError();
}
/// [full-occupancy]

/// One row per block of BLOCK threads, read twice through the L2 (rmsnorm_two_pass_l2_kernel),
/// RESIDENT threads an SM (2048 at 32 registers; 1536 gives the compiler 40).
template <typename T, int VEC, int BLOCK, int RESIDENT = 2048>
cudaError_t launch_two_pass_l2(const Args<T>& a, cudaStream_t stream) {
    rmsnorm_two_pass_l2_kernel<T, VEC, BLOCK, RESIDENT><<<grid_for(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// One block of BLOCK threads a row of exactly 2 · BLOCK vectors (rmsnorm_two_pass_exact_kernel).
template <typename T, int VEC, int BLOCK>
cudaError_t launch_two_pass_exact(const Args<T>& a, cudaStream_t stream) {
    rmsnorm_two_pass_exact_kernel<T, VEC, BLOCK><<<grid_for(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// [memory-speed]
/// Peak DRAM bandwidth past which the long 16-bit rows take the fast-memory plan, in GB/s: between
/// an H100's 3352 and an H200's 4915, the two GPUs these plans were measured on.
constexpr double kFastMemoryGBps = 4000.0;

/// The current device's peak DRAM bandwidth in GB/s: its memory clock (kHz, two transfers a clock)
/// times its bus width. 0 where the device does not say.
inline cudaError_t peak_dram_gbps(double* gbps) {
    int device = 0, khz = 0, bits = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device);
    *gbps = 2.0 * khz * 1e3 * (bits / 8) / 1e9;
    return err;
}

/// Many long 16-bit rows (641 to 4096 vectors) on a GPU whose DRAM is fast beside its L2 (an
/// H200): each row held in registers and read once, on an H200 (one process, both dtypes) faster
/// than the general L2 read-twice kernel by 10-11% at 6144 columns, 4-6% at 7168, 3-9% at 8192,
/// 1-6% at 16384, and 512 threads of 8 vectors (the ladder below) 12% faster than 1024 of 4 at
/// 32768. Rows of exactly 2 · G vectors are the exception: without the general kernel's loops and
/// bounds tests, reading them twice is 2-7% faster than holding them (rmsnorm_two_pass_exact_kernel;
/// performance.md, "On an H200"). Returns false where the H100's plan applies.
template <typename T, int VEC>
bool launch_fast_memory(const Args<T>& a, cudaStream_t stream, cudaError_t* err) {
    const int nvec = a.cols / VEC;
    if (nvec <= 640 || nvec > 4096) return false;
    double gbps = 0.0;
    *err = peak_dram_gbps(&gbps);
    if (*err != cudaSuccess) return true;
    if (gbps < kFastMemoryGBps) return false;
    // Rows of 2 · G vectors, G a whole number of warps, fewer rows than a grid holds: read twice
    // through the L2 by a kernel with no loops (measured at 5632, 6144, 7168 and 8192 columns).
    if (a.rows <= kMaxGrid) {
        switch (nvec) {
            case 704: *err = launch_two_pass_exact<T, VEC, 352>(a, stream); return true;
            case 768: *err = launch_two_pass_exact<T, VEC, 384>(a, stream); return true;
            case 832: *err = launch_two_pass_exact<T, VEC, 416>(a, stream); return true;
            case 896: *err = launch_two_pass_exact<T, VEC, 448>(a, stream); return true;
            case 960: *err = launch_two_pass_exact<T, VEC, 480>(a, stream); return true;
            case 1024: *err = launch_two_pass_exact<T, VEC, 512>(a, stream); return true;
            default: break;
        }
    }
    if (nvec <= 768) *err = launch_full_occupancy<T, VEC, 384>(a, stream);
    else if (nvec <= 896) *err = launch_rows<T, VEC, 256, 4>(a, stream);
    else if (nvec <= 1024) *err = launch_full_occupancy<T, VEC, 512>(a, stream);
    else if (nvec <= 2048) *err = launch_rows<T, VEC, 512, 4>(a, stream);
    else *err = launch_rows<T, VEC, 512, 8>(a, stream);
    return true;
}
/// [memory-speed]

/// [launch-shape]
/// Threads per row (G) and vectors per thread (ITERS) from the row length in vectors.
template <typename T, int VEC>
cudaError_t launch_width(const Args<T>& a, cudaStream_t stream) {
    const int nvec = a.cols / VEC;
    // Few rows (decode batches) leave most of the GPU idle and the time is latency:
    // spread each row over as many threads as it has vectors, one load each.
    if constexpr (VEC * sizeof(T) == 16) {
        if (a.rows <= kFewRows && nvec > 64) {
            if (nvec <= 128) return launch_rows<T, VEC, 128, 1>(a, stream);
            if (nvec <= 256) return launch_rows<T, VEC, 256, 1>(a, stream);
            // 257 to 1024 vectors (2049 to 8192 16-bit columns): the decode kernel, one block a row.
            // Up to 512, two vectors a thread in 256 threads: on an H100 up to 0.16 us faster than
            // one in 512 at 1 to 256 rows of 4096 columns, once the tail after the barrier was short.
            if (nvec <= 512) return launch_decode<T, VEC, 256, 2>(a, stream);
            // Past 512 vectors, two a thread in just the warps they need: on an H100, 16 and 128 rows
            // of 5120-8192 columns 0.05-0.3 us faster than one in 1024 threads; one row level.
            if (nvec <= 640) return launch_decode<T, VEC, 320, 2>(a, stream);
            if (nvec <= 768) return launch_decode<T, VEC, 384, 2>(a, stream);
            if (nvec <= 896) return launch_decode<T, VEC, 448, 2>(a, stream);
            if (nvec <= 1024) return launch_decode<T, VEC, 512, 2>(a, stream);
            if (nvec <= 2048) return launch_rows<T, VEC, 1024, 2>(a, stream);
            if (nvec <= 4096) return launch_rows<T, VEC, 1024, 4>(a, stream);
        }
    }
    // 256, 512 and 1024 columns of fp16/bf16: one-warp blocks of R rows. Measured on an H100 against the
    // row groups below: 2–3% faster at 256 columns, up to 2% at 512, 1.0–1.3% at 1024 (32768 rows).
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (nvec == kWarpSize && (a.rows + 3) / 4 <= kMaxGrid) return launch_warp_rows<T, VEC, 1, 4>(a, stream);
        if (nvec == 2 * kWarpSize && (a.rows + 1) / 2 <= kMaxGrid) return launch_warp_rows<T, VEC, 2, 2>(a, stream);
        if (nvec == 4 * kWarpSize && (a.rows + 1) / 2 <= kMaxGrid) return launch_warp_rows<T, VEC, 4, 2>(a, stream);
    }
    // Long 16-bit rows (over 1024 columns), many of them: many threads with few loads each
    // beat few threads with many loads. Measured on an H100 (bf16, beside torch.compile):
    // 2 vectors per thread at 32 registers, 2048 threads per SM, is 1-2% faster than 8
    // vectors at 56-62 registers (at most 1152 threads) from 2048 to 16384 columns, and
    // 4 vectors in 1024 threads 1% faster at 32768. Past 4096 columns the row read twice
    // under an L2 eviction priority gains 0.3-3% more; at 32768 columns it was 0.3-2.5% slower
    // (4 vectors a thread at 64 registers, 2 or 1 at 32 in steps), at 4096 up to 0.5% and at
    // 1024 7-8%. That is the H100's plan: on faster memory (an H200) the rows of 641 to 4096
    // vectors are held in registers instead (launch_fast_memory).
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (cudaError_t err = cudaSuccess; launch_fast_memory<T, VEC>(a, stream, &err)) return err;
        if (nvec > 128 && nvec <= 256) return launch_full_occupancy<T, VEC, 128>(a, stream);
        if (nvec > 256 && nvec <= 512) return launch_full_occupancy<T, VEC, 256>(a, stream);
        // 4097 to 16384 columns: the row read twice, the second time from L2, which the first
        // read asked to keep it. 4097 to 5120 columns take 320 threads (the block reduction
        // takes any number of warps), so 5120 columns leave none idle.
        if (nvec > 512 && nvec <= 640) return launch_two_pass_l2<T, VEC, 320>(a, stream);
        if (nvec > 512 && nvec <= 896) return launch_two_pass_l2<T, VEC, 512>(a, stream);
        // 8192 columns: 3 blocks an SM rather than 4. Measured on an H100 (both dtypes, both
        // orders): +0.7-0.8% at 8192 x 8192, +0.4-1.1% at 16384 x 8192, within the noise at
        // 4096 x 8192; at 6144 and 7168 columns 3-7% slower.
        if (nvec > 896 && nvec <= 1024) return launch_two_pass_l2<T, VEC, 512, 1536>(a, stream);
        if (nvec > 1024 && nvec <= 2048) return launch_two_pass_l2<T, VEC, 1024>(a, stream);
        if (nvec > 2048 && nvec <= 4096) return launch_rows<T, VEC, 1024, 4>(a, stream);
    }
    // Many rows: enough loads in flight per thread to cover the memory latency. Short rows
    // share a warp (no block barrier, 8 to 128 rows per 256-thread block); long rows take
    // a whole block so the row still fits in registers. Accesses of 4 bytes or less carry
    // so little that each thread needs 16 of them in flight rather than 8.
    constexpr int kI = VEC * sizeof(T) >= 8 ? 8 : 16;
    if (nvec <= 8) return launch_rows<T, VEC, 2, 4>(a, stream);
    if (nvec <= 16) return launch_rows<T, VEC, 4, 4>(a, stream);
    if (nvec <= 32) return launch_rows<T, VEC, 8, 4>(a, stream);
    if (nvec <= 64) return launch_rows<T, VEC, 16, 4>(a, stream);
    if (nvec <= 128) return launch_rows<T, VEC, 32, 4>(a, stream);
    if (nvec <= 32 * kI) return launch_rows<T, VEC, 32, kI>(a, stream);
    if (nvec <= 64 * kI) return launch_rows<T, VEC, 64, kI>(a, stream);
    if (nvec <= 128 * kI) return launch_rows<T, VEC, 128, kI>(a, stream);
    if (nvec <= 256 * kI) return launch_rows<T, VEC, 256, kI>(a, stream);
    if (nvec <= 512 * kI) return launch_rows<T, VEC, 512, kI>(a, stream);
    if (nvec <= 1024 * kI) return launch_rows<T, VEC, 1024, kI>(a, stream);
    // Only narrow widths get here (a 16-bit row at 16 bytes is at most 8192 vectors).
    if constexpr (kMaxCols / VEC > 1024 * kI) {
        constexpr int kBlock = 1024;
        rmsnorm_stream_kernel<T, VEC, kBlock><<<grid_for(a.rows), kBlock, 0, stream>>>(a);
        return cudaGetLastError();
    }
    return cudaErrorInvalidValue;  // unreachable: cols ≤ kMaxCols
}
/// [launch-shape]

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// [peel-launch]
/// The peeled kernel: a block of G threads a row, ITERS vectors a thread, MIN_BLOCKS blocks an SM.
/// A block of 1024 threads of 4 or 8 vectors (rows of 2049 to 8192 vectors) is alone on its SM,
/// so nothing hides the shift of the weight at the start of each of its rows. On fast memory, with
/// more 16-bit rows than SMs, the grid is instead the SMs rounded down to a multiple of 8, the
/// longest period of the rows' offsets, where that adds no wave: the rows a block walks share one
/// offset and it shifts the weight once. On an H200 1.14-1.16x at 32767 and 65535 columns; shorter
/// rows, whose blocks share an SM, were 0.93-1.00x on such a grid (performance.md, "On an H200").
template <typename T, int G, int ITERS, int MIN_BLOCKS>
cudaError_t launch_peeled_block(const Args<T>& a, cudaStream_t stream) {
    constexpr int kSmem = ITERS * G * 16;
    auto kernel = rmsnorm_peeled_kernel<T, G, ITERS, MIN_BLOCKS>;
    int64_t resident = 0;
    if constexpr (G * MIN_BLOCKS == 1024 && sizeof(T) == 2) {
        double gbps = 0.0;
        int device = 0, sms = 0;
        cudaError_t err = peak_dram_gbps(&gbps);
        if (err == cudaSuccess) err = cudaGetDevice(&device);
        if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return err;
        // Whole periods of blocks, and no more waves than a block a row takes (129 rows on 132 SMs
        // are one wave of blocks but two of a grid of 128).
        const int64_t blocks = sms / 8 * 8;
        if (gbps >= kFastMemoryGBps && blocks > 0 && a.rows > blocks &&
            (a.rows + blocks - 1) / blocks <= (a.rows + sms - 1) / sms) {
            resident = blocks;
            kernel = rmsnorm_peeled_kernel<T, G, ITERS, MIN_BLOCKS, true>;
        }
    }
    if constexpr (kSmem > 48 * 1024) {
        const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
        if (err != cudaSuccess) return err;
    }
    kernel<<<resident > 0 ? static_cast<unsigned>(resident) : grid_for(a.rows), G, kSmem, stream>>>(a);
    return cudaGetLastError();
}

/// Launch shapes of peeled rows by the most whole 16-byte vectors a row holds (65 to 8192; fewer
/// keep the narrow path): 2 vectors a thread for up to 2048 vectors at 32 registers, 2048 threads
/// an SM, as the aligned rows of 1025 to 4096 16-bit columns; longer rows 4 or 8 in 1024 threads.
template <typename T>
cudaError_t launch_peeled(const Args<T>& a, cudaStream_t stream) {
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const int nvec = a.cols / V;
    if (nvec <= 128) return launch_peeled_block<T, 64, 2, 32>(a, stream);
    if (nvec <= 256) return launch_peeled_block<T, 128, 2, 16>(a, stream);
    if (nvec <= 512) return launch_peeled_block<T, 256, 2, 8>(a, stream);
    if (nvec <= 1024) return launch_peeled_block<T, 512, 2, 4>(a, stream);
    if (nvec <= 2048) return launch_peeled_block<T, 1024, 2, 2>(a, stream);
    if (nvec <= 4096) return launch_peeled_block<T, 1024, 4, 1>(a, stream);
    return launch_peeled_block<T, 1024, 8, 1>(a, stream);
}
/// [peel-launch]

}  // namespace

/**
 * @brief RMSNorm of a rows × cols matrix with strided rows, vectorized for any alignment.
 *
 * y[r][c] = x[r][c] · rsqrt(mean_c(x[r][c]²) + eps) · weight[c], accumulated in fp32.
 *
 * @tparam T element type of x, weight and y: `float`, `__half` or `__nv_bfloat16`
 * @param[in]  x             input; row r starts at x + r · x_row_stride
 * @param[in]  x_row_stride  elements between consecutive rows of x (≥ cols)
 * @param[in]  weight        cols scale factors
 * @param[out] y             output, same shape; must not overlap x. Padding between a
 *                           row's end and the next row is never written.
 * @param[in]  y_row_stride  elements between consecutive rows of y (≥ cols)
 * @param[in]  rows          number of rows; 0 launches nothing
 * @param[in]  cols          elements per row, 1 to 65536
 * @param[in]  eps           added to the mean square inside the square root
 * @param[in]  stream        the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for a
 *         negative rows or cols outside 1..65536
 *
 * Performance: the kernel moves each byte of x and y once, so its speed is the memory
 * system's. With 16-byte accesses (8 fp16/bf16 or 4 fp32 elements) a warp moves 512 bytes
 * per load instruction and each thread keeps up to 8 of them in flight. Measured on an
 * H100 against a large device-to-device copy (about 3.0 TB/s): fp16 and bf16 tensors of
 * 256 MiB and more run at 94–99% of it, 128 MiB at about 90%, 64 MiB at about 83% (a copy
 * kernel of that size, timed the same way, is no faster: the launch, the last wave and the
 * L2 write-back cost a fixed few microseconds), and a decode batch of 1 to 16 rows of 4096
 * takes under 5 µs. A misaligned pointer or stride, or cols not a multiple of the width,
 * drops to the widest legal width; at width 1 (odd cols) the same bytes take 8 times the
 * instructions and the kernel ran at about 76%. Where x and y are misaligned alike, rows of
 * more than 64 whole vectors are peeled to their 16-byte boundaries instead: 93% at
 * 16384 x 4095.
 */
template <typename T>
cudaError_t rmsnorm(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride, int64_t rows,
                    int64_t cols, float eps, cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > kMaxCols) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;

    /// [vector-width]
    // Widest width w (elements) such that every access of w elements is aligned to
    // w·sizeof(T): w divides cols, every row stride (when there is a second row) and
    // the address of x, weight and y. Halving from 16 bytes gives gcd(16/sizeof(T), cols)
    // limited by the alignment actually present.
    auto fits = [&](int w) {
        const int bytes = w * static_cast<int>(sizeof(T));
        return cols % w == 0 && aligned_to(x, bytes) && aligned_to(weight, bytes) && aligned_to(y, bytes) &&
               (rows == 1 || (x_row_stride % w == 0 && y_row_stride % w == 0));
    };
    int vec = 16 / static_cast<int>(sizeof(T));
    while (vec > 1 && !fits(vec)) vec /= 2;
    /// [vector-width]

    const Args<T> a{x, x_row_stride, weight, y, y_row_stride, rows, static_cast<int>(cols), eps};
    /// [peel-choice]
    // Narrower than 16 bytes, but x and y misaligned alike in every row (their addresses, and
    // their strides when there is a second row, differ by a multiple of 16 bytes), and rows of
    // more than 64 whole vectors: each row peels its few elements before its first 16-byte
    // boundary and after its last whole vector, and moves the rest 16 bytes at a time.
    constexpr int kFull = 16 / static_cast<int>(sizeof(T));
    const auto apart = [](const void* p, const void* q) {
        return (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(q)) % 16;
    };
    if (vec < kFull && cols / kFull > 64 && cols / kFull <= 8192 && apart(x, y) == 0 &&
        (rows == 1 || ((x_row_stride - y_row_stride) * static_cast<int64_t>(sizeof(T))) % 16 == 0)) {
        return launch_peeled(a, stream);
    }
    /// [peel-choice]
    if constexpr (sizeof(T) == 2) {
        if (vec == 8) return launch_width<T, 8>(a, stream);
    }
    if (vec == 4) return launch_width<T, 4>(a, stream);
    if (vec == 2) return launch_width<T, 2>(a, stream);
    return launch_width<T, 1>(a, stream);
}

}  // namespace workbook::lesson4
