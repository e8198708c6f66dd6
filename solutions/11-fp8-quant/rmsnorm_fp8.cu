/**
 * @file rmsnorm_fp8.cu
 * @brief Lesson 11 reference: RMSNorm fused with dynamic per-row FP8 (e4m3) quantisation.
 *
 * What it shows:
 *  - a row that must be on chip twice: the scale needs the amax of the whole normalised row
 *    before any element can be quantised, so the row is read into registers once, reduced,
 *    then quantised from the same registers (rows too long for registers are read a second
 *    time, mostly from L2);
 *  - two reductions in one: max|y| = rstd · max|x · w| because rstd > 0 is the same for the
 *    whole row, so the sum of squares and the amax reduce together, one barrier per row;
 *  - e4m3 rounding and saturation: cvt.rn.satfinite through cuda_fp8.h's __NV_SATFINITE, two
 *    elements per instruction; the all-zero row (scale 0, q 0, no 0/0) and the NaN row (scale
 *    NaN) handled by the order of two comparisons, not by extra branches;
 *  - the byte count of a kernel whose output is half its input (for 16-bit x): 3 bytes per
 *    element, two of them read;
 *  - the vector width of lesson 4, now limited by three alignments: x and weight at
 *    sizeof(T) per element, q at one byte per element (rows peeled where x and q agree);
 *  - counting instructions: bf16 widened with a shift or a mask, e4m3 pairs stored as the
 *    16-bit words the conversion makes, so a short row's kernel fits in 55 registers, not 72;
 *  - rows too long for one block's registers split over a cluster of two blocks (sm_90), each
 *    holding half the row and its half of the weight, the two partial reductions exchanged
 *    through distributed shared memory (lesson 8).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "workbook/rmsnorm_fp8.h"

namespace workbook::lesson11 {
namespace {

constexpr int kWarpSize = 32;
/// Largest grid.x a launch accepts; kernels walk the rows, so any rows count fits.
constexpr int64_t kMaxGrid = 2147483647;
/// Up to this many rows the launch is latency-bound (fewer rows than two per SM).
constexpr int64_t kFewRows = 256;

/// Minimum resident blocks for __launch_bounds__: 1024-thread blocks get 64 registers each.
constexpr int min_blocks(int block) { return block >= 1024 ? 1 : 0; }
/// Blocks per row for rows longer than one block holds (16-bit rows past 32768 columns).
constexpr int kClusterBlocks = 2;
/// Threads of each of those blocks: two such blocks share an SM (64 registers each).
constexpr int kClusterBlock = 512;

/// Everything a kernel needs about one call, passed by value.
template <typename T>
struct Args {
    const T* x;
    int64_t x_row_stride;
    const T* weight;
    __nv_fp8_storage_t* q;  ///< e4m3 bytes
    int64_t q_row_stride;
    float* scale;
    int64_t rows;
    int cols;
    float eps;
    float clip;
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// VEC elements of T that move as one access (up to 16 bytes).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// VEC e4m3 bytes that move as one store (up to 8 bytes).
template <int VEC>
struct alignas(VEC) QPack {
    __nv_fp8_storage_t v[VEC];
};

/// A pack of x or the weight read from global memory as one access. Handed `w[idx]` itself,
/// `unpack` below reads it as 32-bit words and the compiler made four 4-byte loads of each
/// 16-byte vector; one load made the rows kernels up to 11% faster on an H200, where the
/// issue slots are the limit (performance.md, "On an H200").
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const Pack<T, VEC>* p) {
    Pack<T, VEC> out;
    if constexpr (sizeof(out) == 16) {
        const uint4 raw = *reinterpret_cast<const uint4*>(p);
        memcpy(&out, &raw, sizeof(out));
    } else if constexpr (sizeof(out) == 8) {
        const uint2 raw = *reinterpret_cast<const uint2*>(p);
        memcpy(&out, &raw, sizeof(out));
    } else if constexpr (sizeof(out) == 4) {
        const unsigned raw = *reinterpret_cast<const unsigned*>(p);
        memcpy(&out, &raw, sizeof(out));
    } else {
        out = *p;
    }
    return out;
}

/// [unpack]
/// fp32 copies of a pack's elements, 16-bit pairs converted as pairs. A bf16 is the top half of
/// an fp32, so a 32-bit word holding two of them gives the low one shifted up and the high one
/// with the low half cleared: one instruction each. (`__bfloat1622float2` compiles to three for
/// the pair, and the kernel widens every element four times.)
template <typename T, int VEC>
__device__ __forceinline__ void unpack(const Pack<T, VEC>& p, float (&f)[VEC]) {
    if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
        const unsigned* words = reinterpret_cast<const unsigned*>(&p);
#pragma unroll
        for (int j = 0; j < VEC / 2; ++j) {
            f[2 * j] = __uint_as_float(words[j] << 16);
            f[2 * j + 1] = __uint_as_float(words[j] & 0xffff0000u);
        }
    } else if constexpr (std::is_same_v<T, __half> && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 t = __half22float2(*reinterpret_cast<const __half2*>(&p.v[k]));
            f[k] = t.x;
            f[k + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
    }
}
/// [unpack]

/// Keeps the packed row (not fp32 copies of it) alive across the reduction: half the
/// registers for 16-bit rows. Emits no code.
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

/// [peel]
/// Elements before the first 16-byte boundary of a row of x that starts at `row`: 0 when the
/// row is aligned, else up to VEC - 1 (never more than cols). A row of odd length, or a tensor
/// one element off, takes these few one at a time, then whole aligned vectors, then the rest.
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
/// `skew` elements past the aligned `base` and ends before element `end` of it: one aligned
/// load when the weight lines up with the row's vectors, else the two aligned 16-byte loads
/// that cover the VEC elements, shifted into place (the second read element by element when
/// its 16 bytes run past the weight's end).
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

/// [quantise]
/// VEC values v[k] · factor rounded to e4m3, to nearest even, saturating at ±448: two per
/// cvt.rn.satfinite.e4m3x2.f32 on sm_89 and newer. Saturation is not optional: the element
/// that set the amax lands on 448 only up to fp32 rounding, and with a clip every element past
/// it lies beyond 448; a conversion without it makes NaN of them. The pair is stored as the
/// 16-bit word the conversion returns (element k in the low byte, as in memory): split into
/// bytes and packed again, it cost a dozen instructions per 8 elements.
template <int VEC>
__device__ __forceinline__ QPack<VEC> quantise(const float (&v)[VEC], float factor) {
    QPack<VEC> out;
    if constexpr (VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            reinterpret_cast<__nv_fp8x2_storage_t*>(out.v)[k / 2] = __nv_cvt_float2_to_fp8x2(
                make_float2(v[k] * factor, v[k + 1] * factor), __NV_SATFINITE, __NV_E4M3);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) out.v[k] = __nv_cvt_float_to_fp8(v[k] * factor, __NV_SATFINITE, __NV_E4M3);
    }
    return out;
}

/// The row's scale and the factor that takes x · w to e4m3's range, from the row's sum of
/// squares and max|x · w|. max|y| = rstd · max|x · w| (rstd > 0 is common to the row). The clip
/// is applied as `clip < amax ? clip : amax` so a NaN amax stays NaN; the factor is 0 unless the
/// amax is a positive number, so an all-zero row gives q = 0 with scale 0 (no 0 / 0), and a row
/// holding a NaN gives scale NaN (its q, all 0, dequantise to NaN).
__device__ __forceinline__ float row_scale(float sumsq, float max_xw, int cols, float eps, float clip, float* factor) {
    const float rstd = 1.0f / sqrtf(sumsq / static_cast<float>(cols) + eps);
    const float amax = rstd * max_xw;
    const float clipped = clip < amax ? clip : amax;
    *factor = clipped > 0.0f ? rstd * (kE4m3Max / clipped) : 0.0f;
    return clipped / kE4m3Max;
}
/// [quantise]

/// [two-reductions]
/// Sum and max over the G consecutive lanes that share a row (G a power of two, at most 32):
/// one butterfly carries both. fmaxf drops a NaN |x · w|; the NaN row is caught by its rstd.
template <int G>
__device__ __forceinline__ void group_reduce(float& sum, float& mx) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    }
}

/// The same over a block of BLOCK threads, every thread gets both results. Two banks of slots
/// used on alternate rows, so one barrier per row is enough. Each group of kWarps lanes reads
/// all the warps' slots, so the second butterfly has log2(kWarps) steps, not five: the same sums
/// in the same order as five steps over the slots padded with zeros, with fewer instructions.
template <int BLOCK>
__device__ __forceinline__ void block_reduce(float& sum, float& mx, float2 (*slots)[BLOCK / kWarpSize], int bank) {
    constexpr int kWarps = BLOCK / kWarpSize;
    static_assert((kWarps & (kWarps - 1)) == 0, "the butterfly over the warps' slots needs a power of two");
    const int lane = threadIdx.x % kWarpSize;
    group_reduce<kWarpSize>(sum, mx);
    if (lane == 0) slots[bank][threadIdx.x / kWarpSize] = make_float2(sum, mx);
    __syncthreads();
    const float2 mine = slots[bank][lane % kWarps];
    sum = mine.x;
    mx = mine.y;
    group_reduce<kWarps>(sum, mx);
}
/// [two-reductions]

template <int G>
using Slots = float2[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

template <int G>
__device__ __forceinline__ void row_reduce(float& sum, float& mx, Slots<G>& slots, int bank) {
    if constexpr (G <= kWarpSize) {
        group_reduce<G>(sum, mx);
    } else {
        block_reduce<G>(sum, mx, slots, bank);
    }
}

/**
 * Rows held in registers. A group of G threads owns a row; thread `lane` holds vectors lane,
 * lane + G, ... (ITERS of them), so each warp-wide access is contiguous. G <= 32: BLOCK / G rows
 * per block, shuffles only; G > 32: one row per block. EARLY_W: the weight stays in registers
 * from the first pass to the second; otherwise it is read twice (from L1/L2: every row shares it).
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool EARLY_W, int MIN_BLOCKS = min_blocks(BLOCK)>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) fp8_rows_kernel(Args<T> a) {
    static_assert(G <= kWarpSize ? BLOCK % G == 0 : BLOCK == G, "a row group is a sub-warp or the block");
    using P = Pack<T, VEC>;
    constexpr int kRowsPerBlock = BLOCK / G;
    __shared__ Slots<G> slots;
    const int nvec = a.cols / VEC;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;

    // Every thread runs the same iterations (the test is on the block's first row), so the
    // shuffles and barriers are never divergent.
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < a.rows;
        const int64_t r = active ? row : 0;
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + r * a.x_row_stride);

        /// [row-on-chip]
        // The first time on chip: every load in flight before any use; the row then stays in
        // registers until it is quantised.
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) xv[i] = xr[idx];
        }
        P wv[EARLY_W ? ITERS : 1];
        if constexpr (EARLY_W) {
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (active && idx < nvec) wv[i] = w[idx];
            }
        }
        float sumsq = 0.0f, max_xw = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                if constexpr (EARLY_W) {
                    unpack(wv[i], g);
                } else {
                    unpack(load_pack(w + idx), g);  // read again in the second pass
                }
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    sumsq = fmaf(f[k], f[k], sumsq);
                    max_xw = fmaxf(max_xw, fabsf(f[k] * g[k]));
                }
            }
            keep_packed(xv[i]);
        }
        row_reduce<G>(sumsq, max_xw, slots, bank);
        bank ^= 1;
        /// [row-on-chip]

        if (active) {
            float factor;
            const float s = row_scale(sumsq, max_xw, a.cols, a.eps, a.clip, &factor);
            if (lane == 0) a.scale[row] = s;
            QPack<VEC>* qr = reinterpret_cast<QPack<VEC>*>(a.q + row * a.q_row_stride);
            // The second time: the same registers, now that the scale is known.
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    float f[VEC], g[VEC];
                    unpack(xv[i], f);
                    if constexpr (EARLY_W) {
                        unpack(wv[i], g);
                    } else {
                        unpack(load_pack(w + idx), g);
                    }
#pragma unroll
                    for (int k = 0; k < VEC; ++k) f[k] *= g[k];
                    qr[idx] = quantise<VEC>(f, factor);
                }
            }
        }
    }
}

/**
 * Rows whose starts are not all 16-byte aligned, peeled (x and q misaligned alike in every row):
 * one row per block of G threads at a time, each thread holding ITERS 16-byte vectors of x, lane
 * l < head also element l before them and lane l < tail element l after the last whole vector.
 * Before it loads a row whose offset is not the last row's, each thread shifts its weight vectors
 * into place for that offset and keeps them in dynamic shared memory (its own slots: no barrier),
 * where both passes over the row read them with one aligned 16-byte load each. RESIDENT: the grid
 * is the blocks the device holds at once and a block walks rows of one offset, so it stages the
 * weight again only when the head changes; otherwise it stages it for every row, with no branch
 * that would hold the row's loads behind it (a block takes one row).
 */
template <typename T, int G, int ITERS, bool RESIDENT = false, int MIN_BLOCKS = min_blocks(G)>
__global__ void __launch_bounds__(G, MIN_BLOCKS) fp8_peeled_kernel(Args<T> a) {
    constexpr int VEC = 16 / static_cast<int>(sizeof(T));
    using P = Pack<T, VEC>;
    __shared__ Slots<G> slots;
    extern __shared__ uint4 weight_raw[];  // ITERS · G vectors
    P* weight = reinterpret_cast<P*>(weight_raw);
    const int lane = threadIdx.x;
    int bank = 0;
    int staged = -1;  // RESIDENT: the head whose shifted weight the slots hold
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const T* xrow = a.x + row * a.x_row_stride;
        const int head = peel_count<T, VEC>(xrow, a.cols);
        const int nvec = (a.cols - head) / VEC;
        const int tail = a.cols - head - nvec * VEC;
        const int tail_col = head + nvec * VEC + lane;
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
        // The edges as x · w: at most one element before the vectors and one after.
        const float xh = lane < head ? to_float(xrow[lane]) : 0.0f;
        const float xt = lane < tail ? to_float(xrow[tail_col]) : 0.0f;
        const float yh = lane < head ? xh * to_float(a.weight[lane]) : 0.0f;
        const float yt = lane < tail ? xt * to_float(a.weight[tail_col]) : 0.0f;
        float sumsq = fmaf(xh, xh, xt * xt), max_xw = fmaxf(fabsf(yh), fabsf(yt));
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (lane + i * G < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                unpack(weight[lane + i * G], g);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    sumsq = fmaf(f[k], f[k], sumsq);
                    max_xw = fmaxf(max_xw, fabsf(f[k] * g[k]));
                }
            }
            keep_packed(xv[i]);
        }
        row_reduce<G>(sumsq, max_xw, slots, bank);
        bank ^= 1;

        float factor;
        const float s = row_scale(sumsq, max_xw, a.cols, a.eps, a.clip, &factor);
        if (lane == 0) a.scale[row] = s;
        __nv_fp8_storage_t* qrow = a.q + row * a.q_row_stride;
        if (lane < head) {
            const float e[1] = {yh};
            qrow[lane] = quantise<1>(e, factor).v[0];
        }
        if (lane < tail) {
            const float e[1] = {yt};
            qrow[tail_col] = quantise<1>(e, factor).v[0];
        }
        QPack<VEC>* qr = reinterpret_cast<QPack<VEC>*>(qrow + head);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (idx < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                unpack(weight[idx], g);
#pragma unroll
                for (int k = 0; k < VEC; ++k) f[k] *= g[k];
                qr[idx] = quantise<VEC>(f, factor);
            }
        }
    }
}

/// [cluster-rows]
/**
 * Rows longer than one block's registers at 512 threads (4097 to 8192 vectors of 16 bytes:
 * 16-bit rows of 32776 to 65536 columns), on sm_90: a cluster of kClusterBlocks blocks per
 * row, block `rank` holding vectors [rank·S, (rank+1)·S) of it in registers (S = 512·ITERS),
 * so two 512-thread blocks share an SM where a 1024-thread block per row had the SM to itself,
 * with nothing to overlap its barrier and its second pass with.
 *
 * The grid is what the device holds at once, each cluster walking rows (one cluster launched
 * per row measured 8% slower than the 1024-thread block), so each block stages its half of the
 * weight in shared memory once instead of reading it from L2 twice per row. The two halves'
 * (Σx², max|x·w|) meet in distributed shared memory: each block's in its own slot, one cluster
 * barrier, then every thread reads both slots in rank order, the same bits in both blocks. The
 * slots alternate between rows, so the one barrier is enough: a block writes a slot again two
 * rows later, past a barrier its peer reaches only after reading it.
 */
template <typename T, int VEC, int ITERS>
__global__ void __launch_bounds__(kClusterBlock, 2) fp8_cluster_rows_kernel(Args<T> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    using P = Pack<T, VEC>;
    constexpr int kSlice = kClusterBlock * ITERS;
    __shared__ Slots<kClusterBlock> slots;
    __shared__ float2 block_totals[2];
    extern __shared__ uint4 weight_raw[];  // this block's kSlice weight vectors
    P* weight = reinterpret_cast<P*>(weight_raw);
    cg::cluster_group cluster = cg::this_cluster();
    const int nvec = a.cols / VEC;
    const int first = static_cast<int>(cluster.block_rank()) * kSlice;  // this block's first vector
    const int lane = threadIdx.x % kWarpSize;
    for (int j = threadIdx.x; j < kSlice && first + j < nvec; j += kClusterBlock)
        weight[j] = reinterpret_cast<const P*>(a.weight)[first + j];
    __syncthreads();

    int bank = 0;
    const int64_t clusters = gridDim.x / kClusterBlocks;
    for (int64_t row = blockIdx.x / kClusterBlocks; row < a.rows; row += clusters) {
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + row * a.x_row_stride) + first;
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int j = threadIdx.x + i * kClusterBlock;
            if (first + j < nvec) xv[i] = xr[j];
        }
        float sumsq = 0.0f, max_xw = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int j = threadIdx.x + i * kClusterBlock;
            if (first + j < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                unpack(weight[j], g);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    sumsq = fmaf(f[k], f[k], sumsq);
                    max_xw = fmaxf(max_xw, fabsf(f[k] * g[k]));
                }
            }
            keep_packed(xv[i]);
        }
        block_reduce<kClusterBlock>(sumsq, max_xw, slots, bank);
        if (threadIdx.x == 0) block_totals[bank] = make_float2(sumsq, max_xw);
        cluster.sync();
        // Lane r reads block r's slot; lanes 0 and 1 add the same two values.
        float2 t = lane < kClusterBlocks ? *cluster.map_shared_rank(&block_totals[bank], lane) : make_float2(0.0f, 0.0f);
        group_reduce<kClusterBlocks>(t.x, t.y);
        sumsq = __shfl_sync(0xffffffffu, t.x, 0);
        max_xw = __shfl_sync(0xffffffffu, t.y, 0);
        bank ^= 1;

        float factor;
        const float s = row_scale(sumsq, max_xw, a.cols, a.eps, a.clip, &factor);
        if (first == 0 && threadIdx.x == 0) a.scale[row] = s;
        QPack<VEC>* qr = reinterpret_cast<QPack<VEC>*>(a.q + row * a.q_row_stride) + first;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int j = threadIdx.x + i * kClusterBlock;
            if (first + j < nvec) {
                float f[VEC], g[VEC];
                unpack(xv[i], f);
                unpack(weight[j], g);
#pragma unroll
                for (int k = 0; k < VEC; ++k) f[k] *= g[k];
                qr[j] = quantise<VEC>(f, factor);
            }
        }
    }
    // No block may leave while its peer can still read its slots.
    cluster.sync();
#endif
}
/// [cluster-rows]

/// [stream-twice]
/// Rows too long for registers (fp32 rows past 32768 columns, 16-bit rows at a narrow width):
/// one block per row, the sums streamed in a first read, the row read again (mostly from L2,
/// where the first read just left it) to quantise.
template <typename T, int VEC, int BLOCK>
__global__ void __launch_bounds__(BLOCK, min_blocks(BLOCK)) fp8_stream_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kUnroll = 4;
    __shared__ Slots<BLOCK> slots;
    const int nvec = a.cols / VEC;
    const P* __restrict__ w = reinterpret_cast<const P*>(a.weight);
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const P* __restrict__ xr = reinterpret_cast<const P*>(a.x + row * a.x_row_stride);
        float sumsq = 0.0f, max_xw = 0.0f;
        for (int base = threadIdx.x; base < nvec; base += kUnroll * BLOCK) {
            P xv[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
                if (base + u * BLOCK < nvec) xv[u] = xr[base + u * BLOCK];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if (base + u * BLOCK < nvec) {
                    float f[VEC], g[VEC];
                    unpack(xv[u], f);
                    unpack(load_pack(w + base + u * BLOCK), g);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) {
                        sumsq = fmaf(f[k], f[k], sumsq);
                        max_xw = fmaxf(max_xw, fabsf(f[k] * g[k]));
                    }
                }
            }
        }
        block_reduce<BLOCK>(sumsq, max_xw, slots, bank);
        bank ^= 1;
        float factor;
        const float s = row_scale(sumsq, max_xw, a.cols, a.eps, a.clip, &factor);
        if (threadIdx.x == 0) a.scale[row] = s;
        QPack<VEC>* qr = reinterpret_cast<QPack<VEC>*>(a.q + row * a.q_row_stride);
#pragma unroll 4
        for (int idx = threadIdx.x; idx < nvec; idx += BLOCK) {
            float f[VEC], g[VEC];
            unpack(load_pack(xr + idx), f);
            unpack(load_pack(w + idx), g);
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] *= g[k];
            qr[idx] = quantise<VEC>(f, factor);
        }
    }
}
/// [stream-twice]

inline int grid_for(int64_t groups) { return static_cast<int>(groups < kMaxGrid ? groups : kMaxGrid); }

template <typename T, int VEC, int G, int ITERS>
cudaError_t launch_rows(const Args<T>& a, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    // The weight stays in registers between the two passes when that costs at most 16
    // registers per thread (8 in 1024-thread blocks, which get only 64).
    constexpr bool kEarlyWeight = ITERS * VEC * sizeof(T) <= (kBlock >= 1024 ? 32 : 64);
    fp8_rows_kernel<T, VEC, G, ITERS, kBlock, kEarlyWeight>
        <<<grid_for((a.rows + kRowsPerBlock - 1) / kRowsPerBlock), kBlock, 0, stream>>>(a);
    return cudaGetLastError();
}

/// [row-blocks]
/// One row per block of G threads, ITERS vectors a thread, the compiler held to the registers that
/// MIN_BLOCKS blocks an SM leave each thread (2048 threads an SM at ITERS = 2: 32 registers).
template <typename T, int VEC, int G, int ITERS, int MIN_BLOCKS>
cudaError_t launch_row_blocks(const Args<T>& a, cudaStream_t stream) {
    fp8_rows_kernel<T, VEC, G, ITERS, G, false, MIN_BLOCKS><<<grid_for(a.rows), G, 0, stream>>>(a);
    return cudaGetLastError();
}
/// [row-blocks]

/// [cluster-launch]
/// The cluster kernel on as many clusters as the device holds at once (at most one per row).
template <typename T, int VEC, int ITERS>
cudaError_t launch_cluster_rows(const Args<T>& a, cudaStream_t stream) {
    auto kernel = fp8_cluster_rows_kernel<T, VEC, ITERS>;
    const size_t smem = static_cast<size_t>(kClusterBlock) * ITERS * sizeof(Pack<T, VEC>);
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (err != cudaSuccess) return err;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = kClusterBlocks;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.gridDim = dim3(kClusterBlocks);
    config.blockDim = dim3(kClusterBlock);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    int clusters = 0;
    err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
    if (err != cudaSuccess) return err;
    const int64_t limit = kMaxGrid / kClusterBlocks;
    int64_t grid = a.rows < clusters ? a.rows : (clusters > 0 ? clusters : 1);
    if (grid > limit) grid = limit;
    config.gridDim = dim3(static_cast<unsigned>(grid * kClusterBlocks));
    return cudaLaunchKernelEx(&config, kernel, a);
}
/// [cluster-launch]

/// The current device's value of `attribute`, 0 where the device does not say.
inline int device_attribute(cudaDeviceAttr attribute) {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return value;
}

/// True when the current device has thread-block clusters (sm_90 and newer).
inline bool has_clusters() { return device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9; }

/// [memory-speed]
/// Peak DRAM bandwidth past which 16-bit rows of 1032 to 5120 columns take 4 or 5 vectors a
/// thread, in GB/s: between an H100's 3352 and an H200's 4915, the two GPUs the plans were
/// measured on.
constexpr double kFastMemoryGBps = 4000.0;

/// True when the current device's DRAM peaks at kFastMemoryGBps or more: its memory clock (kHz,
/// two transfers a clock) times its bus width. False where the device does not say.
inline bool fast_memory() {
    const int khz = device_attribute(cudaDevAttrMemoryClockRate);
    const int bits = device_attribute(cudaDevAttrGlobalMemoryBusWidth);
    return 2.0 * khz * 1e3 * (bits / 8) / 1e9 >= kFastMemoryGBps;
}
/// [memory-speed]

/// [launch-shape]
/// Threads per row (G) and vectors per thread (ITERS) from the row length in vectors, as in
/// lesson 4: a few lanes per row and many rows per block for short rows, a warp in the middle,
/// a block for long rows, and each row spread thin when there are too few rows to fill the GPU.
template <typename T, int VEC>
cudaError_t launch_width(const Args<T>& a, cudaStream_t stream) {
    const int nvec = a.cols / VEC;
    if constexpr (VEC * sizeof(T) == 16) {
        if (a.rows <= kFewRows && nvec > 64) {
            if (nvec <= 128) return launch_rows<T, VEC, 128, 1>(a, stream);
            if (nvec <= 256) return launch_rows<T, VEC, 256, 1>(a, stream);
            if (nvec <= 512) return launch_rows<T, VEC, 512, 1>(a, stream);
            if (nvec <= 1024) return launch_rows<T, VEC, 1024, 1>(a, stream);
            if (nvec <= 2048) return launch_rows<T, VEC, 1024, 2>(a, stream);
            if (nvec <= 4096) return launch_rows<T, VEC, 1024, 4>(a, stream);
        }
    }
    // Many 16-bit rows of 1032 to 8192 columns: more threads holding fewer vectors each than the
    // 8 a thread below. Measured on an H100 (bf16, against 8 vectors in a warp or a block of 64 or
    // 128 threads, 53-56 registers): 2 vectors in 128 or 256 threads at 32 registers (the SM's
    // full 2048 threads) +2-5% at 2048 and 4096 columns; 4 vectors in 256 threads at 5 blocks an
    // SM +0.3-5% from 5120 to 8192 columns. Past 4096 columns, 2 vectors a thread lost up to 14%
    // and rows read twice under an L2 eviction priority (lesson 4's long rows) up to 30%: the
    // amax and the quantising add instructions that those kernels' shapes do not hide.
    // On an H200 these rows are held by instruction issue, not by memory: each thread's share of
    // the row's reduction, scale and stores costs as much at 2 vectors a thread as at 4. Measured
    // there against the plan below: 4 vectors a thread at 1536 threads an SM 1.06-1.07 times as
    // fast at 2048 columns, 1.10 at 4096, 1.15 at 1536 and 1.21 at 3072; 5 vectors in 128 threads
    // (a row of 5120 columns exactly, where 256 threads of 4 leave 3 in 8 of their slots empty)
    // 1.08-1.10 (performance.md, "On an H200").
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (nvec > 128 && nvec <= 640 && fast_memory()) {
            if (nvec <= 256) return launch_row_blocks<T, VEC, 64, 4, 24>(a, stream);
            if (nvec <= 512) return launch_row_blocks<T, VEC, 128, 4, 12>(a, stream);
            return launch_row_blocks<T, VEC, 128, 5, 10>(a, stream);
        }
        if (nvec > 128 && nvec <= 256) return launch_row_blocks<T, VEC, 128, 2, 16>(a, stream);
        if (nvec > 256 && nvec <= 512) return launch_row_blocks<T, VEC, 256, 2, 8>(a, stream);
        if (nvec > 512 && nvec <= 1024) return launch_row_blocks<T, VEC, 256, 4, 5>(a, stream);
    }
    // Accesses of 4 bytes or less carry so little that each thread needs 16 in flight, not 8.
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
    // Past what 512 threads hold: half a row per block, two blocks per row (sm_90), else the
    // whole row in one 1024-thread block.
    if constexpr (VEC * sizeof(T) == 16) {
        if (nvec <= kClusterBlocks * kClusterBlock * kI && has_clusters())
            return launch_cluster_rows<T, VEC, kI>(a, stream);
    }
    if (nvec <= 1024 * kI) return launch_rows<T, VEC, 1024, kI>(a, stream);
    if constexpr (kMaxCols / VEC > 1024 * kI) {
        fp8_stream_kernel<T, VEC, 1024><<<grid_for(a.rows), 1024, 0, stream>>>(a);
        return cudaGetLastError();
    }
    return cudaErrorInvalidValue;  // unreachable: cols <= kMaxCols
}
/// [launch-shape]

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// [peel-launch]
/// The peeled kernel: a block of G threads a row, ITERS vectors a thread. On fast memory, with more
/// rows than the device holds blocks, the grid is the blocks it holds at once (1280 threads an SM,
/// which the launch bounds make room for) rounded down to a multiple of 8, so that the rows a block
/// walks share one offset and it shifts the weight once: on an H200 1.07-1.26 times as fast as a
/// block a row, which shifts it for every row (performance.md, "On an H200").
template <typename T, int G, int ITERS>
cudaError_t launch_peeled_block(const Args<T>& a, cudaStream_t stream) {
    constexpr int kSmem = ITERS * G * 16;
    constexpr int kResident = G >= 1024 ? 1 : 1280 / G;  // blocks an SM on the resident grid
    const int64_t held = static_cast<int64_t>(device_attribute(cudaDevAttrMultiProcessorCount)) * kResident / 8 * 8;
    const bool resident = held > 0 && a.rows > held && fast_memory();
    auto kernel = resident ? fp8_peeled_kernel<T, G, ITERS, true, kResident> : fp8_peeled_kernel<T, G, ITERS>;
    if constexpr (kSmem > 48 * 1024) {
        const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
        if (err != cudaSuccess) return err;
    }
    kernel<<<resident ? static_cast<unsigned>(held) : grid_for(a.rows), G, kSmem, stream>>>(a);
    return cudaGetLastError();
}

/// Launch shapes of peeled rows by the most whole 16-byte vectors a row holds (65 to 4096; fewer
/// keep the narrow path): one vector a thread for a few rows, as launch_width's; else 4 a thread in
/// 64 to 1024 threads. Measured on an H100 at 16384 x 4095 bf16 (511 vectors): 4 a thread in 128
/// threads and 2 in 256 both 1.15 times as fast as the aligned rows' 8 in 64 (77 registers, 768
/// threads an SM, against 1024 and more).
template <typename T>
cudaError_t launch_peeled(const Args<T>& a, cudaStream_t stream) {
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const int nvec = a.cols / V;
    if (a.rows <= kFewRows) {
        if (nvec <= 128) return launch_peeled_block<T, 128, 1>(a, stream);
        if (nvec <= 256) return launch_peeled_block<T, 256, 1>(a, stream);
        if (nvec <= 512) return launch_peeled_block<T, 512, 1>(a, stream);
        if (nvec <= 1024) return launch_peeled_block<T, 1024, 1>(a, stream);
        if (nvec <= 2048) return launch_peeled_block<T, 1024, 2>(a, stream);
        return launch_peeled_block<T, 1024, 4>(a, stream);
    }
    if (nvec <= 256) return launch_peeled_block<T, 64, 4>(a, stream);
    if (nvec <= 512) return launch_peeled_block<T, 128, 4>(a, stream);
    if (nvec <= 1024) return launch_peeled_block<T, 256, 4>(a, stream);
    if (nvec <= 2048) return launch_peeled_block<T, 512, 4>(a, stream);
    return launch_peeled_block<T, 1024, 4>(a, stream);
}
/// [peel-launch]

}  // namespace

template <typename T>
cudaError_t rmsnorm_fp8_quant(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                              int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps, float clip,
                              cudaStream_t stream) {
    /// [validate]
    // `!(clip > 0)` and `!(eps >= 0)` are true for NaN too.
    if (rows < 0 || cols < 1 || cols > kMaxCols || !(clip > 0.0f) || !(eps >= 0.0f)) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (!x || !weight || !q || !scale) return cudaErrorInvalidValue;
    if (rows > 1 && (x_row_stride < cols || q_row_stride < cols)) return cudaErrorInvalidValue;
    /// [validate]

    /// [vector-width]
    // Widest width w (elements) with every access aligned: w divides cols and, when there is
    // a second row, both strides; x and weight are aligned to w · sizeof(T), q to w bytes.
    auto fits = [&](int w) {
        const int bytes = w * static_cast<int>(sizeof(T));
        return cols % w == 0 && aligned_to(x, bytes) && aligned_to(weight, bytes) && aligned_to(q, w) &&
               (rows == 1 || (x_row_stride % w == 0 && q_row_stride % w == 0));
    };
    int vec = 16 / static_cast<int>(sizeof(T));
    while (vec > 1 && !fits(vec)) vec /= 2;
    /// [vector-width]

    const Args<T> a{x, x_row_stride, weight, reinterpret_cast<__nv_fp8_storage_t*>(q), q_row_stride, scale, rows,
                    static_cast<int>(cols), eps, clip};
    /// [peel-choice]
    // Narrower than 16 bytes, but x and q misaligned alike in every row (x's element offset from a
    // 16-byte boundary and q's from an 8-byte one agree, for every row when there is a second),
    // and rows of 65 to 4096 whole vectors: each row peels its few elements before its first
    // 16-byte boundary of x and after its last whole vector, and moves the rest 16 bytes of x (8
    // of q) at a time.
    constexpr int kFull = 16 / static_cast<int>(sizeof(T));
    const auto element = [](const void* p, int size) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) / size); };
    if (vec < kFull && cols / kFull > 64 && cols / kFull <= 4096 && aligned_to(x, sizeof(T)) &&
        (element(x, sizeof(T)) - element(q, 1)) % kFull == 0 && (rows == 1 || (x_row_stride - q_row_stride) % kFull == 0)) {
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

}  // namespace workbook::lesson11
