/**
 * @file fused_add_rmsnorm.cu
 * @brief Lesson 5 reference: residual add fused into RMSNorm, one pass over memory.
 *
 * What it shows:
 *  - s = x + residual in fp32, residual_out = s rounded to T, y = s · rsqrt(mean(s²) + eps) · weight,
 *    with x and residual read once and y and residual_out written once;
 *  - the row kept in registers between the sum of squares and the scaling, instead of
 *    writing residual_out and reading it back (as the packed x and residual it was loaded
 *    as; the fp32 sum is rebuilt from them, bit for bit, when it is needed again); for 128 MiB
 *    or more of rows of 2049 to 16384 16-bit columns, the inputs read twice instead, with an
 *    L2 eviction priority (inline PTX) that keeps them in L2 for the second read;
 *  - a plan per GPU, as in lesson 4: on memory as fast as an H200's most of those rows stay in
 *    registers; the device's memory clock and bus width pick the plan;
 *  - the in-place form LLM engines call (y == x, residual_out == residual, either or both):
 *    each thread reads all of its elements before it writes any of them, and no element is
 *    read by one thread and written by another, so the aliasing is harmless;
 *  - the same vector width rule and launch shapes as lesson 4, with half the elements per
 *    thread, since a thread now holds two inputs, and lesson 4's one-warp blocks of several
 *    rows at 256, 512 and 1024 fp16/bf16 columns;
 *  - lesson 4's peeled rows for row lengths that are not a multiple of 16 bytes: each row
 *    moves its few elements before its first 16-byte boundary and after its last one alone.
 *
 * What it leaves out: 16-bit rows of more than 32768 cols (fp32 rows of more than 16384)
 * do not fit in one block's registers twice over. Up to 65536 cols at 16-byte width, x
 * stays in registers and the residual is read a second time, mostly from L2; beyond that
 * (fp32 rows over 32768 cols, or narrow widths) both inputs are read twice. In both cases
 * nothing is written until the second pass, so the inputs are still intact when reread.
 * Lesson 8 keeps rows that long on chip with a thread-block cluster.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace workbook::lesson5 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxCols = 65536;
/// Largest grid.x a launch accepts; kernels walk the rows, so any rows count fits.
constexpr int64_t kMaxGrid = 2147483647;
/// Up to this many rows the launch is latency-bound (fewer rows than two per SM).
constexpr int64_t kFewRows = 256;
/// Bytes of packed input (x and residual together) one thread keeps in registers:
/// 32 registers, the same as lesson 4's row.
constexpr int kBytesPerThread = 128;
/// Inputs (x and residual together) from which many long rows are read twice through the L2:
/// the smallest such tensor of the seed shapes (4096 x 8192), where it was measured to pay.
constexpr int64_t kTwoPassL2MinBytes = int64_t(128) << 20;

/// Minimum resident blocks for __launch_bounds__. 0 leaves the choice to the compiler;
/// for 1024-thread blocks it would squeeze registers to fit two blocks per SM and spill.
constexpr int min_blocks(int block) { return block >= 1024 ? 1 : 0; }

/// Everything a kernel needs about one call. No __restrict__ on the four row pointers:
/// y may be x and residual_out may be residual.
template <typename T>
struct Args {
    const T* x;
    const T* residual;
    const T* weight;
    T* y;
    T* residual_out;
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
            // bf16 is the top half of an fp32: a shift and a mask per pair, which leave the
            // pack packed until each value is used (the intrinsic makes fp32 copies live).
            const unsigned bits = *reinterpret_cast<const unsigned*>(&p.v[k]);
            f[k] = __uint_as_float(bits << 16);
            f[k + 1] = __uint_as_float(bits & 0xffff0000u);
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

/// Tells the compiler the packed inputs may have changed, so it converts them to fp32
/// again after the reduction instead of keeping fp32 copies alive through it (twice the
/// registers for 16-bit inputs; the longest rows would spill). Emits no code.
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

/// A load of data this kernel reads for the last time: at 16 bytes it is marked
/// evict-first (ld.global.cs), so it does not push out lines a later pass still needs.
template <typename P>
__device__ __forceinline__ P load_last(const P* p) {
    if constexpr (sizeof(P) == 16) {
        const uint4 v = __ldcs(reinterpret_cast<const uint4*>(p));
        return *reinterpret_cast<const P*>(&v);
    } else {
        return *p;
    }
}

/// A store of output this kernel never reads back, marked evict-first at 16 bytes.
template <typename P>
__device__ __forceinline__ void store_stream(P* p, const P& v) {
    if constexpr (sizeof(P) == 16) {
        __stcs(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&v));
    } else {
        *p = v;
    }
}

/// Sum over the G consecutive lanes that share a row (G a power of two, at most 32).
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// Sum over a block of BLOCK threads; every thread gets the total. Two banks of slots,
/// used on alternate rows, make one barrier per row enough.
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

/// Sum over the G threads of a row group.
template <int G>
__device__ __forceinline__ float row_sum(float v, Partials<G>& partials, int bank) {
    if constexpr (G <= kWarpSize) {
        return group_sum<G>(v);
    } else {
        return block_sum<G>(v, partials, bank);
    }
}

/**
 * Rows kept in registers as packed x and residual. A row group of G threads owns a row;
 * thread `lane` owns vectors lane, lane + G, ..., so every warp-wide access is contiguous.
 * G ≤ 32: BLOCK/G rows per block, shuffles only; G > 32: one row per block.
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool EARLY_W>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) fused_add_rows_kernel(Args<T> a) {
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
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < a.rows;
        // Rows are contiguous: row r starts r·cols elements in, a 64-bit offset.
        const int64_t offset = (active ? row : 0) * a.cols;
        const P* xr = reinterpret_cast<const P*>(a.x + offset);
        const P* rr = reinterpret_cast<const P*>(a.residual + offset);
        P* yr = reinterpret_cast<P*>(a.y + offset);
        P* ror = reinterpret_cast<P*>(a.residual_out + offset);

        /// [fused-add]
        // Both inputs of the whole row are loaded before anything is stored: 2·ITERS
        // independent loads in flight, and with y == x or residual_out == residual no
        // store can land on an element this thread has yet to read.
        P xv[ITERS], rv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) {
                xv[i] = xr[idx];
                rv[i] = rr[idx];
            }
        }
        // EARLY_W: the weight is loaded with x and residual, its latency hidden by theirs.
        P wv[EARLY_W ? ITERS : 1];
        if constexpr (EARLY_W) {
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (active && idx < nvec) wv[i] = w[idx];
            }
        }
        // s = x + r in fp32. residual_out is stored at once, so its stores overlap the
        // reduction instead of following it.
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) {
                float s[VEC], f[VEC];
                unpack(xv[i], s);
                unpack(rv[i], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    s[k] += f[k];
                    sum = fmaf(s[k], s[k], sum);
                }
                ror[idx] = pack<T, VEC>(s);
            }
            keep_packed(xv[i]);
            keep_packed(rv[i]);
        }
        /// [fused-add]

        sum = row_sum<G>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);

        if (active) {
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    // The sum is rebuilt from the packed inputs still in registers: the same
                    // fp32 additions give the same bits. (Keeping s in fp32 costs as many
                    // registers in principle, but the compiler then keeps both forms alive.)
                    float s[VEC], f[VEC];
                    unpack(xv[i], s);
                    unpack(rv[i], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] += f[k];
                    if constexpr (EARLY_W) {
                        unpack(wv[i], f);
                    } else {
                        unpack(w[idx], f);
                    }
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] = s[k] * inv_rms * f[k];
                    yr[idx] = pack<T, VEC>(s);
                }
            }
        }
    }
}

/// [decode]
/// Decode batches (at most kFewRows rows): one row a block of BLOCK threads, ITERS vectors of
/// each input a thread, no row loop, as lesson 4's decode kernel: x, the residual and the
/// weight loaded first through plain global loads (no `__restrict__`: the read-only path
/// measured slower here, and y or residual_out may be x or the residual), one barrier, and
/// `rsqrtf` for the inverse RMS. Each thread stores only elements it has already loaded, so the
/// in-place calls stay safe. After the barrier only the scale and the stores are left: the sum
/// x + r and the weight wait in fp32 registers, 1/cols is computed while the loads are in flight,
/// and every thread adds the warps' partials from 16-byte shared loads. Measured on an H100
/// against fused_add_rows_kernel, which it replaces here (one process, L2 flushed, three rounds):
/// level to 0.2 us faster at 1, 16 and 128 rows of 4096 and 7168 columns; the short tail, with 256
/// threads of two vectors at 4096 columns, another 0.03-0.2 us at 1 to 256 rows of 4096 to 8192
/// (performance.md, "Decode rows: the path after the barrier").
template <typename T, int VEC, int BLOCK, int ITERS>
__global__ void __launch_bounds__(BLOCK) fused_add_decode_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kWarps = BLOCK / kWarpSize;
    constexpr int kSlots = (kWarps + 3) / 4 * 4;
    __shared__ __align__(16) float partials[kSlots];
    const int nvec = a.cols / VEC;
    const int64_t offset = static_cast<int64_t>(blockIdx.x) * a.cols;
    const P* xr = reinterpret_cast<const P*>(a.x + offset);
    const P* rr = reinterpret_cast<const P*>(a.residual + offset);
    P* yr = reinterpret_cast<P*>(a.y + offset);
    P* ror = reinterpret_cast<P*>(a.residual_out + offset);
    const P* w = reinterpret_cast<const P*>(a.weight);

    P xv[ITERS], rv[ITERS], wv[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) {
            xv[i] = xr[idx];
            rv[i] = rr[idx];
        }
    }
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) wv[i] = w[idx];
    }
    // s = x + r; residual_out is stored before the reduction, so its stores overlap it.
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    float sum = 0.0f;
    float sf[ITERS][VEC], gf[ITERS][VEC];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) {
            float s[VEC], f[VEC];
            unpack(xv[i], s);
            unpack(rv[i], f);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                s[k] += f[k];
                sum = fmaf(s[k], s[k], sum);
            }
            ror[idx] = pack<T, VEC>(s);
#pragma unroll
            for (int k = 0; k < VEC; ++k) sf[i][k] = s[k];
            unpack(wv[i], gf[i]);
        }
    }
    // One row a block and no second row: a single bank of partials and one barrier.
    const int lane = threadIdx.x % kWarpSize;
    sum = group_sum<kWarpSize>(sum);
    if (lane == 0) partials[threadIdx.x / kWarpSize] = sum;
    // The slots past the last warp's are zeroed, so every thread reads whole float4s alike.
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
            float s[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) s[k] = sf[i][k] * inv_rms * gf[i][k];
            yr[idx] = pack<T, VEC>(s);
        }
    }
}
/// [decode]

/// [long-rows]
/// Rows of more than 4096 16-byte vectors (16-bit rows beyond 32768 cols): x and the
/// residual together would need 64 registers per thread at 1024 threads. x alone stays in
/// registers; the residual is read twice, the second time mostly from L2. Nothing is
/// written before the reduction, and each element's residual is read again by the thread
/// that then overwrites it, so residual_out == residual and y == x stay safe.
template <typename T, int VEC, int ITERS, int BLOCK>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) fused_add_long_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    __shared__ Partials<BLOCK> partials;
    const int nvec = a.cols / VEC;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t offset = row * a.cols;
        const P* xr = reinterpret_cast<const P*>(a.x + offset);
        const P* rr = reinterpret_cast<const P*>(a.residual + offset);
        P* yr = reinterpret_cast<P*>(a.y + offset);
        P* ror = reinterpret_cast<P*>(a.residual_out + offset);
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = threadIdx.x + i * BLOCK;
            if (idx < nvec) xv[i] = xr[idx];
        }
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = threadIdx.x + i * BLOCK;
            if (idx < nvec) {
                float s[VEC], f[VEC];
                unpack(xv[i], s);
                unpack(rr[idx], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    s[k] += f[k];
                    sum = fmaf(s[k], s[k], sum);
                }
            }
            keep_packed(xv[i]);
        }
        sum = block_sum<BLOCK>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = threadIdx.x + i * BLOCK;
            if (idx < nvec) {
                float s[VEC], f[VEC];
                unpack(xv[i], s);
                unpack(load_last(rr + idx), f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] += f[k];
                store_stream(ror + idx, pack<T, VEC>(s));
                unpack(w[idx], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] = s[k] * inv_rms * f[k];
                store_stream(yr + idx, pack<T, VEC>(s));
            }
        }
    }
}
/// [long-rows]

/// [two-pass]
/// Rows read twice: one block per row, STEP vectors of each input per thread at a time. The
/// first pass only reads (x and residual, for the sum of squares); the second reads them
/// again and writes both outputs. Because nothing is written before the barrier in
/// block_sum, and each element is read and written by the same thread, in-place calls stay
/// correct, and the fp32 sum is recomputed exactly rather than read back rounded from
/// residual_out. Two uses:
///  - KEEP_IN_L2 (16-byte accesses): many 16-bit rows of 2049 to 16384 columns, 128 MiB of
///    input or more, 2 vectors of each input a thread at 64 registers. The first read marks
///    its lines evict-last, so the second finds them in L2 (marked evict-first there): DRAM
///    moves each byte once. Measured on an H100 against the register-held row (4 vectors of
///    each input, 62 registers, 256-thread blocks): 0.5-2% faster on those tensors, level with
///    `torch.compile` (which runs the same scheme), 4096 x 8192 (128 MiB of input) included
///    (+1.2-1.7%); slower at 1024 columns (2.5%), level at 32768.
///  - otherwise rows too long for registers (fp32 rows over 32768 columns, narrow widths): the
///    second read comes mostly from L2 anyway; it is marked evict-first and its stores streamed.
/// How a pass of the two-pass kernel reads: with an L2 priority, plainly, or as a last use.
enum class ReadKind { kEvictLast, kEvictFirst, kPlain, kLast };

/// STEP vectors of x and of the residual from vector `base` on, BLOCK apart, all issued
/// before any is used.
template <ReadKind KIND, int STEP, int BLOCK, typename P>
__device__ __forceinline__ void load_step(const P* xr, const P* rr, int base, int nvec, P (&xv)[STEP],
                                          P (&rv)[STEP]) {
#pragma unroll
    for (int u = 0; u < STEP; ++u) {
        const int idx = base + u * BLOCK;
        if (idx < nvec) {
            if constexpr (KIND == ReadKind::kEvictLast) {
                xv[u] = load_l2<L2Priority::kEvictLast>(xr + idx);
                rv[u] = load_l2<L2Priority::kEvictLast>(rr + idx);
            } else if constexpr (KIND == ReadKind::kEvictFirst) {
                xv[u] = load_l2<L2Priority::kEvictFirst>(xr + idx);
                rv[u] = load_l2<L2Priority::kEvictFirst>(rr + idx);
            } else if constexpr (KIND == ReadKind::kPlain) {
                xv[u] = xr[idx];
                rv[u] = rr[idx];
            } else {
                xv[u] = load_last(xr + idx);
                rv[u] = load_last(rr + idx);
            }
        }
    }
}

template <typename T, int VEC, int BLOCK, int MIN_BLOCKS, int STEP, bool KEEP_IN_L2>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) fused_add_two_pass_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    static_assert(!KEEP_IN_L2 || sizeof(P) == 16, "the L2 policy rides on 16-byte loads");
    constexpr ReadKind kFirstRead = KEEP_IN_L2 ? ReadKind::kEvictLast : ReadKind::kPlain;
    constexpr ReadKind kSecondRead = KEEP_IN_L2 ? ReadKind::kEvictFirst : ReadKind::kLast;
    __shared__ Partials<BLOCK> partials;
    const int nvec = a.cols / VEC;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t offset = row * a.cols;
        const P* xr = reinterpret_cast<const P*>(a.x + offset);
        const P* rr = reinterpret_cast<const P*>(a.residual + offset);
        P* yr = reinterpret_cast<P*>(a.y + offset);
        P* ror = reinterpret_cast<P*>(a.residual_out + offset);
        float sum = 0.0f;
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += STEP * BLOCK) {
            P xv[STEP], rv[STEP];
            load_step<kFirstRead, STEP, BLOCK>(xr, rr, base, nvec, xv, rv);
#pragma unroll
            for (int u = 0; u < STEP; ++u) {
                if (base + u * BLOCK < nvec) {
                    float s[VEC], f[VEC];
                    unpack(xv[u], s);
                    unpack(rv[u], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) {
                        s[k] += f[k];
                        sum = fmaf(s[k], s[k], sum);
                    }
                }
            }
        }
        sum = block_sum<BLOCK>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += STEP * BLOCK) {
            P xv[STEP], rv[STEP];
            load_step<kSecondRead, STEP, BLOCK>(xr, rr, base, nvec, xv, rv);
#pragma unroll
            for (int u = 0; u < STEP; ++u) {
                const int idx = base + u * BLOCK;
                if (idx < nvec) {
                    float s[VEC], f[VEC];
                    unpack(xv[u], s);
                    unpack(rv[u], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] += f[k];
                    if constexpr (KEEP_IN_L2) {
                        ror[idx] = pack<T, VEC>(s);
                        const uint4 wq = __ldg(reinterpret_cast<const uint4*>(w + idx));
                        unpack(*reinterpret_cast<const P*>(&wq), f);
                    } else {
                        store_stream(ror + idx, pack<T, VEC>(s));
                        unpack(w[idx], f);
                    }
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] = s[k] * inv_rms * f[k];
                    if constexpr (KEEP_IN_L2) {
                        yr[idx] = pack<T, VEC>(s);
                    } else {
                        store_stream(yr + idx, pack<T, VEC>(s));
                    }
                }
            }
        }
    }
}
/// [two-pass]

/// One block per row group; the hardware balances the tail.
inline int grid_for(int64_t row_groups) { return static_cast<int>(row_groups < kMaxGrid ? row_groups : kMaxGrid); }

/**
 * Short rows at full width, 256, 512 or 1024 fp16/bf16 columns (32·ITERS vectors), back to back
 * with every offset below 2^31 (the launcher checks): one-warp blocks, each lane owning the
 * same vector (or two) of R consecutive rows, as in lesson 4. All 2·R·ITERS loads are in
 * flight together; the row length is a compile-time constant and the offsets are 32-bit,
 * which this short, latency-bound kernel feels. Every lane reads all of its elements
 * before it writes any, so y == x and residual_out == residual stay safe.
 */
template <typename T, int VEC, int ITERS, int R>
__global__ void __launch_bounds__(kWarpSize) fused_add_warp_rows_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kCols = kWarpSize * ITERS * VEC;
    const int lane = threadIdx.x;
    const int rows = static_cast<int>(a.rows);
    const int first = static_cast<int>(blockIdx.x) * R;
    P xv[R][ITERS], rv[R][ITERS];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = first + r;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (row < rows) {
                xv[r][i] = reinterpret_cast<const P*>(a.x + row * kCols)[lane + i * kWarpSize];
                rv[r][i] = reinterpret_cast<const P*>(a.residual + row * kCols)[lane + i * kWarpSize];
            }
        }
    }
    // After the inputs, so its latency hides under theirs.
    float g[ITERS][VEC];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const P w = reinterpret_cast<const P*>(a.weight)[lane + i * kWarpSize];  // one 16-byte load
        unpack(w, g[i]);
    }
    float s[R][ITERS][VEC], sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = first + r;
        sum[r] = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            float f[VEC];
            unpack(xv[r][i], s[r][i]);
            unpack(rv[r][i], f);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                s[r][i][k] += f[k];
                sum[r] = fmaf(s[r][i][k], s[r][i][k], sum[r]);
            }
            // residual_out leaves now; the fp32 sum stays in registers for y.
            const P out = pack<T, VEC>(s[r][i]);
            if (row < rows) reinterpret_cast<P*>(a.residual_out + row * kCols)[lane + i * kWarpSize] = out;
        }
    }
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
#pragma unroll
        for (int r = 0; r < R; ++r) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], offset);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = first + r;
        const float inv_rms = rsqrtf(sum[r] * (1.0f / kCols) + a.eps);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            float f[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] = s[r][i][k] * inv_rms * g[i][k];
            const P out = pack<T, VEC>(f);
            if (row < rows) reinterpret_cast<P*>(a.y + row * kCols)[lane + i * kWarpSize] = out;
        }
    }
}

/// One launch of fused_add_warp_rows_kernel, when its rows' offsets fit in 32 bits
/// (the last block's rows past the end included); false when they do not.
template <typename T, int VEC, int ITERS, int R>
bool launch_warp_rows(const Args<T>& a, cudaStream_t stream, cudaError_t& err) {
    const int64_t blocks = (a.rows + R - 1) / R;
    if (blocks * R * a.cols >= (int64_t{1} << 31)) return false;
    fused_add_warp_rows_kernel<T, VEC, ITERS, R><<<static_cast<int>(blocks), kWarpSize, 0, stream>>>(a);
    err = cudaGetLastError();
    return true;
}

template <typename T, int VEC, int G, int ITERS>
cudaError_t launch_rows(const Args<T>& a, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    // The weight joins the inputs in flight when that costs at most 8 registers per thread.
    constexpr bool kEarlyWeight = ITERS * VEC * sizeof(T) <= 32;
    fused_add_rows_kernel<T, VEC, G, ITERS, kBlock, kEarlyWeight>
        <<<grid_for((a.rows + kRowsPerBlock - 1) / kRowsPerBlock), kBlock, 0, stream>>>(a);
    return cudaGetLastError();
}

/// A decode batch: one block a row (rows ≤ kFewRows, so the grid is small).
template <typename T, int VEC, int BLOCK, int ITERS>
cudaError_t launch_decode(const Args<T>& a, cudaStream_t stream) {
    fused_add_decode_kernel<T, VEC, BLOCK, ITERS><<<static_cast<int>(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// One row per block of BLOCK threads, read twice through the L2 (fused_add_two_pass_kernel):
/// 2 vectors of each input a thread, 1024 threads an SM (64 registers).
template <typename T, int VEC, int BLOCK>
cudaError_t launch_two_pass_l2(const Args<T>& a, cudaStream_t stream) {
    fused_add_two_pass_kernel<T, VEC, BLOCK, 1024 / BLOCK, 2, true><<<grid_for(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// [peel]
/// Elements before the first 16-byte boundary of a row that starts at `row` (lesson 4's
/// peel_count): 0 when the row is aligned, else up to VEC - 1, never more than cols.
template <typename T, int VEC>
__device__ __forceinline__ int peel_count(const T* row, int cols) {
    constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
    const int past = static_cast<int>(reinterpret_cast<uintptr_t>(row) % kBytes) / static_cast<int>(sizeof(T));
    const int head = past == 0 ? 0 : VEC - past;
    return head < cols ? head : cols;
}

/// The VEC weight elements that line up with vector `idx` of a peeled row, as lesson 4's
/// load_skewed: the weight starts `skew` elements past the aligned `base` and ends before element
/// `end` of it; two aligned 16-byte loads shifted into place (the second element by element
/// where its 16 bytes run past the weight's end).
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
    // A shift by `bytes` over the 32 bytes in constant-index steps (a run-time index would put w
    // in local memory): two words, one word, then half a word.
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
 * Rows whose starts are not all 16-byte aligned (every tensor misaligned alike), peeled: one row
 * per block of G threads at a time, each thread holding ITERS 16-byte vectors of x and of the
 * residual, lane l < head also element l before them and lane l < tail element l after the
 * last whole vector. The weight, shifted into place for the row's offset, waits in dynamic
 * shared memory (each thread's own slots: no barrier). Every thread reads all of its elements
 * before it writes any, so y == x and residual_out == residual stay safe.
 */
template <typename T, int G, int ITERS, int MIN_BLOCKS>
__global__ void __launch_bounds__(G, MIN_BLOCKS) fused_add_peeled_kernel(Args<T> a) {
    constexpr int VEC = 16 / static_cast<int>(sizeof(T));
    using P = Pack<T, VEC>;
    __shared__ Partials<G> partials;
    extern __shared__ uint4 weight_raw[];  // ITERS · G vectors
    P* weight = reinterpret_cast<P*>(weight_raw);
    const int lane = threadIdx.x;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t offset = row * a.cols;
        const int head = peel_count<T, VEC>(a.x + offset, a.cols);
        const int nvec = (a.cols - head) / VEC;
        const int tail = a.cols - head - nvec * VEC;
        const int tail_col = head + nvec * VEC + lane;
        {
            const int skew = static_cast<int>(reinterpret_cast<uintptr_t>(a.weight + head) % 16) /
                             static_cast<int>(sizeof(T));
            const T* wbase = a.weight + head - skew;
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) weight[idx] = load_skewed<T, VEC>(wbase, idx, skew, skew + a.cols - head);
            }
        }
        const P* xr = reinterpret_cast<const P*>(a.x + offset + head);
        const P* rr = reinterpret_cast<const P*>(a.residual + offset + head);
        P xv[ITERS], rv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (lane + i * G < nvec) {
                xv[i] = xr[lane + i * G];
                rv[i] = rr[lane + i * G];
            }
        }
        const float sh = lane < head ? to_float(a.x[offset + lane]) + to_float(a.residual[offset + lane]) : 0.0f;
        const float st =
            lane < tail ? to_float(a.x[offset + tail_col]) + to_float(a.residual[offset + tail_col]) : 0.0f;
        float sum = fmaf(sh, sh, st * st);
        P* ror = reinterpret_cast<P*>(a.residual_out + offset + head);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (lane + i * G < nvec) {
                float s[VEC], f[VEC];
                unpack(xv[i], s);
                unpack(rv[i], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    s[k] += f[k];
                    sum = fmaf(s[k], s[k], sum);
                }
                ror[lane + i * G] = pack<T, VEC>(s);
            }
            keep_packed(xv[i]);
            keep_packed(rv[i]);
        }
        if (lane < head) a.residual_out[offset + lane] = from_float<T>(sh);
        if (lane < tail) a.residual_out[offset + tail_col] = from_float<T>(st);
        sum = row_sum<G>(sum, partials, bank);
        bank ^= 1;
        const float inv_rms = 1.0f / sqrtf(sum * inv_cols + a.eps);
        if (lane < head) a.y[offset + lane] = from_float<T>(sh * inv_rms * to_float(a.weight[lane]));
        if (lane < tail) a.y[offset + tail_col] = from_float<T>(st * inv_rms * to_float(a.weight[tail_col]));
        P* yr = reinterpret_cast<P*>(a.y + offset + head);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (idx < nvec) {
                float s[VEC], f[VEC];
                unpack(xv[i], s);
                unpack(rv[i], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] += f[k];
                unpack(weight[idx], f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] = s[k] * inv_rms * f[k];
                yr[idx] = pack<T, VEC>(s);
            }
        }
    }
}

/// The peeled kernel: a block of G threads a row, ITERS vectors of each input a thread, at most
/// 1024 threads an SM (64 registers), as the register-held rows.
template <typename T, int G, int ITERS>
cudaError_t launch_peeled_block(const Args<T>& a, cudaStream_t stream) {
    auto kernel = fused_add_peeled_kernel<T, G, ITERS, 1024 / G>;
    constexpr int kSmem = ITERS * G * 16;
    if constexpr (kSmem > 48 * 1024) {
        const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
        if (err != cudaSuccess) return err;
    }
    kernel<<<grid_for(a.rows), G, kSmem, stream>>>(a);
    return cudaGetLastError();
}

/// Launch shapes of peeled rows by the whole 16-byte vectors a row holds (65 to 4096; fewer keep
/// the narrow path, more would not fit in registers twice): 2 vectors of each input a thread,
/// 4 past 2048 vectors.
template <typename T>
cudaError_t launch_peeled(const Args<T>& a, cudaStream_t stream) {
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const int nvec = a.cols / V;
    if (nvec <= 128) return launch_peeled_block<T, 64, 2>(a, stream);
    if (nvec <= 256) return launch_peeled_block<T, 128, 2>(a, stream);
    if (nvec <= 512) return launch_peeled_block<T, 256, 2>(a, stream);
    if (nvec <= 1024) return launch_peeled_block<T, 512, 2>(a, stream);
    if (nvec <= 2048) return launch_peeled_block<T, 1024, 2>(a, stream);
    return launch_peeled_block<T, 1024, 4>(a, stream);
}

/// [memory-speed]
/// Peak DRAM bandwidth past which many long 16-bit rows take the fast-memory plan, in GB/s: between
/// an H100's 3352 and an H200's 4915, the two GPUs these plans were measured on (lesson 4's rule).
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

/// 128 MiB or more of 16-bit rows on a GPU whose DRAM is fast beside its L2 (an H200): rows of
/// 1025 to 2048 and 5121 to 16384 columns held in registers, two vectors of each input a thread,
/// instead of the H100's plan. Measured on an H200 (one process, two rounds, both dtypes) against
/// it: 8.5% faster at 6144 columns, 5% at 7168, 7% at 16384, 1-1.4% at 2048 and 8192; at 4096,
/// 5120 and 32768 columns the H100's plan stays as fast or faster (performance.md, "On an H200").
/// Returns false where the H100's plan applies.
template <typename T, int VEC>
bool launch_fast_memory(const Args<T>& a, cudaStream_t stream, cudaError_t* err) {
    const int nvec = a.cols / VEC;
    if (nvec <= 128 || (nvec > 256 && nvec <= 640) || nvec > 2048) return false;
    double gbps = 0.0;
    *err = peak_dram_gbps(&gbps);
    if (*err != cudaSuccess) return true;
    if (gbps < kFastMemoryGBps) return false;
    if (nvec <= 256) *err = launch_rows<T, VEC, 128, 2>(a, stream);
    else if (nvec <= 768) *err = launch_rows<T, VEC, 384, 2>(a, stream);
    else if (nvec <= 1024) *err = launch_rows<T, VEC, 512, 2>(a, stream);
    else *err = launch_rows<T, VEC, 1024, 2>(a, stream);
    return true;
}
/// [memory-speed]

/// [launch-shape]
/// Threads per row from the row length in vectors. Each thread holds K vectors of x and
/// K of residual (128 bytes at 16-byte width, K = 4), so it still has 8 loads in flight;
/// narrow accesses (4 bytes or less) get K = 16, as lesson 4 gives them 16 loads.
template <typename T, int VEC>
cudaError_t launch_width(const Args<T>& a, cudaStream_t stream) {
    constexpr int kPerInput = kBytesPerThread / 2 / (VEC * static_cast<int>(sizeof(T)));
    constexpr int K = kPerInput < 16 ? kPerInput : 16;
    const int nvec = a.cols / VEC;
    // Few rows (decode batches) leave most of the GPU idle and the time is latency:
    // spread each row over as many threads as it has vectors.
    if constexpr (VEC * sizeof(T) == 16) {
        if (a.rows <= kFewRows && nvec > 64) {
            if (nvec <= 128) return launch_rows<T, VEC, 128, 1>(a, stream);
            if (nvec <= 256) return launch_rows<T, VEC, 256, 1>(a, stream);
            // 257 to 1024 vectors (2049 to 8192 16-bit columns): the decode kernel, one block a row.
            // Up to 512, two vectors of each input a thread in 256 threads: on an H100 0.05-0.2 us
            // faster than one in 512 at 1 to 256 rows of 4096, once the tail after the barrier was short.
            if (nvec <= 512) return launch_decode<T, VEC, 256, 2>(a, stream);
            // Past 512 vectors, two a thread in just the warps they need: on an H100, 1 to 128 rows
            // of 5120-8192 columns 0.1-0.3 us (1-4%) faster than one in 1024 threads.
            if (nvec <= 640) return launch_decode<T, VEC, 320, 2>(a, stream);
            if (nvec <= 768) return launch_decode<T, VEC, 384, 2>(a, stream);
            if (nvec <= 896) return launch_decode<T, VEC, 448, 2>(a, stream);
            if (nvec <= 1024) return launch_decode<T, VEC, 512, 2>(a, stream);
            if (nvec <= 2048) return launch_rows<T, VEC, 1024, 2>(a, stream);
        }
    }
    // 256, 512 and 1024 columns of fp16/bf16: one-warp blocks of 4 (2) rows. Measured on an H100 against the
    // row groups below: 2–4% faster at 256 columns, up to 2.5% at 512, 1.2–1.6% at 1024 (32768 rows).
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        cudaError_t err = cudaSuccess;
        if (nvec == kWarpSize && launch_warp_rows<T, VEC, 1, 4>(a, stream, err)) return err;
        if (nvec == 2 * kWarpSize && launch_warp_rows<T, VEC, 2, 2>(a, stream, err)) return err;
        if (nvec == 4 * kWarpSize && launch_warp_rows<T, VEC, 4, 2>(a, stream, err)) return err;
    }
    // 16-bit rows of 2049 to 16384 columns, 128 MiB of input or more: read twice, the second
    // time from L2, which the first read asked to keep them (2 vectors of each input a thread,
    // half of what the register-held row needs). 4097 to 5120 columns take 320 threads, none
    // idle at 5120. At 4096 x 8192 (128 MiB) +1.2-1.7% on an H100, every sample starting from
    // an L2 without the previous kernel's evict-last lines (an earlier measurement without that
    // reset had the register-held row ahead there).
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        const int64_t input_bytes = 2 * a.rows * a.cols * static_cast<int64_t>(sizeof(T));
        if (input_bytes >= kTwoPassL2MinBytes) {
            // That is the H100's plan; faster memory (an H200) holds more of these rows in registers.
            if (cudaError_t err = cudaSuccess; launch_fast_memory<T, VEC>(a, stream, &err)) return err;
            if (nvec > 256 && nvec <= 512) return launch_two_pass_l2<T, VEC, 256>(a, stream);
            if (nvec > 512 && nvec <= 640) return launch_two_pass_l2<T, VEC, 320>(a, stream);
            if (nvec > 640 && nvec <= 1024) return launch_two_pass_l2<T, VEC, 512>(a, stream);
            if (nvec > 1024 && nvec <= 2048) return launch_two_pass_l2<T, VEC, 1024>(a, stream);
        }
    }
    if (nvec <= 2 * K) return launch_rows<T, VEC, 2, K>(a, stream);
    if (nvec <= 4 * K) return launch_rows<T, VEC, 4, K>(a, stream);
    if (nvec <= 8 * K) return launch_rows<T, VEC, 8, K>(a, stream);
    if (nvec <= 16 * K) return launch_rows<T, VEC, 16, K>(a, stream);
    if (nvec <= 32 * K) return launch_rows<T, VEC, 32, K>(a, stream);
    if (nvec <= 64 * K) return launch_rows<T, VEC, 64, K>(a, stream);
    if (nvec <= 128 * K) return launch_rows<T, VEC, 128, K>(a, stream);
    if (nvec <= 256 * K) return launch_rows<T, VEC, 256, K>(a, stream);
    if (nvec <= 512 * K) return launch_rows<T, VEC, 512, K>(a, stream);
    if (nvec <= 1024 * K) return launch_rows<T, VEC, 1024, K>(a, stream);
    constexpr int kBlock = 1024;
    if constexpr (VEC * sizeof(T) == 16) {
        if (nvec <= 8 * kBlock) {
            fused_add_long_kernel<T, VEC, 8, kBlock><<<grid_for(a.rows), kBlock, 0, stream>>>(a);
            return cudaGetLastError();
        }
    }
    if constexpr (VEC * sizeof(T) != 16 || kMaxCols / VEC > 8 * kBlock) {
        // 4 narrow vectors of each input in flight, or 2 of 16 bytes (4 spill at 64 registers).
        constexpr int kStep = VEC * sizeof(T) == 16 ? 2 : 4;
        fused_add_two_pass_kernel<T, VEC, kBlock, min_blocks(kBlock), kStep, false>
            <<<grid_for(a.rows), kBlock, 0, stream>>>(a);
        return cudaGetLastError();
    }
    return cudaErrorInvalidValue;  // unreachable: cols ≤ kMaxCols
}
/// [launch-shape]

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

/**
 * @brief Fused residual add and RMSNorm: residual_out = x + residual, y = rmsnorm(x + residual) · weight.
 *
 * s = x + residual in fp32; residual_out = s rounded to T;
 * y[r][c] = s[r][c] · rsqrt(mean_c(s[r][c]²) + eps) · weight[c], with the fp32 s.
 *
 * @tparam T element type of every tensor: `float`, `__half` or `__nv_bfloat16`
 * @param[in]  x             rows × cols input, rows contiguous
 * @param[in]  residual      rows × cols residual stream, rows contiguous
 * @param[in]  weight        cols scale factors
 * @param[out] y             rows × cols normalised output; may be exactly x
 * @param[out] residual_out  rows × cols updated residual stream; may be exactly residual
 * @param[in]  rows          number of rows; 0 launches nothing
 * @param[in]  cols          elements per row, 1 to 65536
 * @param[in]  eps           added to the mean square inside the square root
 * @param[in]  stream        the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for a
 *         negative rows or cols outside 1..65536
 *
 * Performance: 4·rows·cols·sizeof(T) bytes (two reads, two writes) plus the weight, each
 * once. An add kernel followed by lesson 4's norm moves 5·rows·cols·sizeof(T), since the
 * sum goes out to memory and comes back: fused, the same work needs 80% of the bytes.
 * Measured on an H100 against a large device-to-device copy: fp16 and bf16 tensors of
 * 256 MiB and more run at 95–100% of it, in place or not, and 16-bit rows of 65536 cols,
 * where x stays in registers and the residual is read twice, at about 96%.
 */
template <typename T>
cudaError_t fused_add_rmsnorm(const T* x, const T* residual, const T* weight, T* y, T* residual_out, int64_t rows,
                              int64_t cols, float eps, cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > kMaxCols) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;

    /// [vector-width]
    // Rows are contiguous, so the row stride is cols: a width that divides cols and
    // suits all five pointers is legal on every row.
    auto fits = [&](int w) {
        const int bytes = w * static_cast<int>(sizeof(T));
        return cols % w == 0 && aligned_to(x, bytes) && aligned_to(residual, bytes) && aligned_to(weight, bytes) &&
               aligned_to(y, bytes) && aligned_to(residual_out, bytes);
    };
    int vec = 16 / static_cast<int>(sizeof(T));
    while (vec > 1 && !fits(vec)) vec /= 2;
    /// [vector-width]

    const Args<T> a{x, residual, weight, y, residual_out, rows, static_cast<int>(cols), eps};
    /// [peel-choice]
    // Narrower than 16 bytes, but x, residual, y and residual_out misaligned alike (their
    // addresses differ by multiples of 16 bytes; rows are contiguous, so every row is then
    // misaligned alike too), and rows of 65 to 4096 whole vectors: peel every row.
    constexpr int kFull = 16 / static_cast<int>(sizeof(T));
    const auto apart = [x](const void* p) {
        return (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(x)) % 16;
    };
    if (vec < kFull && cols / kFull > 64 && cols / kFull <= 4096 && apart(residual) == 0 && apart(y) == 0 &&
        apart(residual_out) == 0) {
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

}  // namespace workbook::lesson5
