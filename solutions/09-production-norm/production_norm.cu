/**
 * @file production_norm.cu
 * @brief Lesson 9 reference: one norm with every option, behind a validated descriptor.
 *
 * What it shows:
 *  - a descriptor API: norm_create checks the whole problem once (ranks, shapes, strides,
 *    dtypes, aliasing, limits), returns a Status naming the first broken rule, and fixes the
 *    launch plan (vector width, threads per row, kernel); norm_launch only launches;
 *  - RMSNorm and LayerNorm in one kernel, LayerNorm two-pass over the row held in registers
 *    (the mean first, then the squares about it), so a row whose mean is far from zero loses
 *    nothing to cancellation;
 *  - the options as runtime flags (bias, rstd, residual_out, fp32 weight and bias) and as a
 *    template parameter only where they change the registers a thread holds (a residual);
 *  - 2-D and 3-D strided tensors: a row's offset is (row / heads) · stride0 + (row % heads) · stride1;
 *  - rows too long for one block's registers (past 4096 16-byte vectors): lesson 8's scheme,
 *    a cluster of blocks per row, each keeping its slice of the row in shared memory, the
 *    row's sums exchanged through distributed shared memory; read once, written once;
 *  - long RMSNorm rows read twice, the L2 asked to keep the row between the reads (lessons 4
 *    and 5), so a thread holds 2 vectors and the SM runs more threads;
 *  - a plan keyed on the memory's speed: on an H200's faster DRAM the second read costs time,
 *    and such rows are held in registers instead (fast_memory_launcher);
 *  - several rows per block sharing one copy of the weight and bias in shared memory;
 *  - decode batches (a few rows) of the common options in a kernel with no code for the others:
 *    there the time is one block's path from launch to its last store;
 *  - what one kernel for every option must tell the compiler: a register cap (launch bounds),
 *    and that the weight and bias are read-only for the launch (`__ldg`), so their loads are
 *    16 bytes wide and need not wait behind the stores of y.
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "workbook/production_norm.h"

namespace workbook::lesson9 {
namespace {

constexpr int kWarpSize = 32;
/// Largest grid.x a launch accepts; kernels walk the rows, so any rows count fits.
constexpr int64_t kMaxGrid = 2147483647;
/// Up to this many rows the launch is latency-bound (fewer rows than two per SM).
constexpr int64_t kFewRows = 256;
/// Up to this many rows (at most one a block per SM on an H100) each thread loads its weight
/// and bias with its row, not after the reductions.
constexpr int64_t kEarlyParamRows = 128;
/// Inputs of at least this many bytes beside a residual read their 16-bit rows twice through the L2.
constexpr int64_t kTwoPassL2MinBytes = int64_t(128) << 20;
/// Peak DRAM bandwidth from which 16-bit RMSNorm rows take the plan measured on fast memory, in
/// GB/s: between an H100's 3352 and an H200's 4915, the two GPUs the plans were measured on.
constexpr double kFastMemoryGBps = 4000.0;

/// [occupancy]
/// Blocks of BLOCK threads that must fit on one SM together, for __launch_bounds__: enough for
/// 1024 resident threads, which caps the kernel at 64 registers per thread. One kernel serves
/// every option, and left alone the compiler gave some of them 120 registers, a quarter of
/// the SM's threads, too few loads in flight to keep the memory busy.
constexpr int min_blocks(int block) { return block >= 1024 ? 1 : 1024 / block; }
/// [occupancy]

/// Everything a kernel needs, by value. No __restrict__: y may be x, residual_out may be residual.
struct Params {
    const void* x;
    const void* residual;
    const void* weight;
    const void* bias;
    void* y;
    void* residual_out;
    float* rstd;
    int64_t rows;
    int64_t heads;  ///< rows per outer index (1 for 2-D)
    int64_t x_s0, x_s1, r_s0, r_s1, y_s0, y_s1, ro_s0, ro_s1, rstd_s0;
    int cols;
    float eps;
    bool layer;
    bool weight_f32;
    bool bias_f32;
};

/// Offset of a row from its tensor's first element.
__device__ __forceinline__ int64_t row_offset(int64_t row, int64_t heads, int64_t s0, int64_t s1) {
    return heads == 1 ? row * s0 : (row / heads) * s0 + (row % heads) * s1;
}

/// Index of a row's rstd: rstd has the activations' outer dimensions, its last one dense.
__device__ __forceinline__ int64_t rstd_index(int64_t row, int64_t heads, int64_t s0) {
    return heads == 1 ? row : (row / heads) * s0 + row % heads;
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements that move as one access.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// fp32 copies of a pack's elements; 16-bit pairs convert as pairs (one instruction each).
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
        // bf16 is the top half of an fp32: a shift and a mask. Written out, they leave the pack
        // packed until each value is used; with the conversion intrinsic the compiler keeps
        // fp32 copies, and the slice kernel below spills.
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

/// [read-only]
/// A load through the read-only path (`__ldg`, ld.global.nc), as one access of the pack's
/// size. The weight and bias are never written during a launch (create refuses an output
/// that meets them), and saying so lets the compiler issue these loads ahead of the stores
/// of y. A plain load could not pass those stores, since y might alias the weight for all
/// the compiler knows: each vector's weight would wait for the previous vector's store.
template <typename P>
__device__ __forceinline__ P load_readonly(const P* p) {
    P out;
    if constexpr (sizeof(P) == 16) {
        *reinterpret_cast<uint4*>(&out) = __ldg(reinterpret_cast<const uint4*>(p));
    } else if constexpr (sizeof(P) == 8) {
        *reinterpret_cast<uint2*>(&out) = __ldg(reinterpret_cast<const uint2*>(p));
    } else if constexpr (sizeof(P) == 4) {
        *reinterpret_cast<unsigned*>(&out) = __ldg(reinterpret_cast<const unsigned*>(p));
    } else {
        static_assert(sizeof(P) == 2, "packs are 2 to 16 bytes");
        *reinterpret_cast<unsigned short*>(&out) = __ldg(reinterpret_cast<const unsigned short*>(p));
    }
    return out;
}
/// [read-only]

/// Keeps the packed inputs (not fp32 copies) alive across the reductions: half the registers
/// for 16-bit rows. Emits no code.
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

/// [mixed-precision]
/// VEC parameters (weight or bias) from vector `idx`, stored either as T or as fp32: the
/// type is a runtime flag of the descriptor, the same for every thread, so the branch costs
/// nothing. An fp32 parameter moves twice the bytes of a 16-bit one, in 16-byte pieces.
template <typename T, int VEC>
__device__ __forceinline__ void load_param(const void* base, bool is_f32, int idx, float (&f)[VEC]) {
    if (is_f32) {
        if constexpr (VEC % 4 == 0) {
            const Pack<float, 4>* p = static_cast<const Pack<float, 4>*>(base) + static_cast<int64_t>(idx) * (VEC / 4);
#pragma unroll
            for (int k = 0; k < VEC; k += 4) {
                float q[4];
                unpack(load_readonly(p + k / 4), q);
#pragma unroll
                for (int j = 0; j < 4; ++j) f[k + j] = q[j];
            }
        } else {
            unpack(load_readonly(static_cast<const Pack<float, VEC>*>(base) + idx), f);
        }
    } else {
        unpack(load_readonly(static_cast<const Pack<T, VEC>*>(base) + idx), f);
    }
}
/// [mixed-precision]

/// Parameters of vector `idx` from their copy in shared memory (16-byte words laid out as in
/// global memory: two words a vector for an fp32 parameter beside 16-bit activations).
template <typename T, int VEC>
__device__ __forceinline__ void load_param_staged(const uint4* stage, bool is_f32, int idx, float (&f)[VEC]) {
    static_assert(VEC * sizeof(T) == 16, "staged parameters come in 16-byte vectors");
    if constexpr (sizeof(T) == 2) {
        if (is_f32) {
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const uint4 u = stage[2 * idx + q];
                float g[4];
                unpack(*reinterpret_cast<const Pack<float, 4>*>(&u), g);
#pragma unroll
                for (int k = 0; k < 4; ++k) f[4 * q + k] = g[k];
            }
            return;
        }
    }
    const uint4 u = stage[idx];
    unpack(*reinterpret_cast<const Pack<T, VEC>*>(&u), f);
}

/// The 16-byte words of parameter vector `idx`, as load_param_staged reads them (a copy of
/// one vector at index 0).
template <typename T>
__device__ __forceinline__ void load_param_words(const void* base, bool is_f32, int idx, uint4 (&u)[2]) {
    const uint4* p = static_cast<const uint4*>(base);
    if (sizeof(T) == 2 && is_f32) {
        u[0] = __ldg(p + 2 * idx);
        u[1] = __ldg(p + 2 * idx + 1);
    } else {
        u[0] = __ldg(p + idx);
    }
}

/// Sum over G consecutive lanes (G a power of two, at most 32).
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// Sum over a block of BLOCK threads, every thread gets it. Two banks of slots used in turn:
/// one barrier per reduction is enough.
template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float (*slots)[BLOCK / kWarpSize], int& bank) {
    constexpr int kWarps = BLOCK / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    v = group_sum<kWarpSize>(v);
    if (lane == 0) slots[bank][threadIdx.x / kWarpSize] = v;
    __syncthreads();
    const float total = lane < kWarps ? slots[bank][lane] : 0.0f;
    bank ^= 1;
    return group_sum<kWarpSize>(total);
}

/// Sum over a block of BLOCK threads, every thread gets it, for one row a block on the latency
/// path: each thread adds the warps' partials itself, four at a time from 16-byte shared
/// loads, instead of a second round of shuffles after the barrier.
template <int BLOCK>
__device__ __forceinline__ float block_sum_direct(float v, float (*slots)[BLOCK / kWarpSize], int& bank) {
    constexpr int kWarps = BLOCK / kWarpSize;
    static_assert(kWarps % 4 == 0, "the partials are read as whole float4s");
    v = group_sum<kWarpSize>(v);
    if (threadIdx.x % kWarpSize == 0) slots[bank][threadIdx.x / kWarpSize] = v;
    __syncthreads();
    const float4* q = reinterpret_cast<const float4*>(slots[bank]);
    float4 t = q[0];
#pragma unroll
    for (int j = 1; j < kWarps / 4; ++j) {
        const float4 u = q[j];
        t.x += u.x;
        t.y += u.y;
        t.z += u.z;
        t.w += u.w;
    }
    bank ^= 1;
    return (t.x + t.y) + (t.z + t.w);
}

template <int G>
using Slots = float[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

/// DIRECT: block_sum_direct for a block-wide row (the few-rows kernel).
template <int G, bool DIRECT = false>
__device__ __forceinline__ float row_sum(float v, Slots<G>& slots, int& bank) {
    if constexpr (G <= kWarpSize) {
        return group_sum<G>(v);
    } else if constexpr (DIRECT) {
        return block_sum_direct<G>(v, slots, bank);
    } else {
        return block_sum<G>(v, slots, bank);
    }
}

/// s = x (+ residual) of one vector, in fp32.
template <typename T, int VEC, bool RES>
__device__ __forceinline__ void sum_input(const Pack<T, VEC>& xv, const Pack<T, VEC>& rv, float (&s)[VEC]) {
    unpack(xv, s);
    if constexpr (RES) {
        float f[VEC];
        unpack(rv, f);
#pragma unroll
        for (int k = 0; k < VEC; ++k) s[k] += f[k];
    }
}

/**
 * Rows held in registers. A group of G threads owns a row; thread `lane` holds vectors lane,
 * lane + G, ... (ITERS of them), so each warp-wide access is contiguous. G ≤ 32: BLOCK / G rows
 * per block, shuffles only; G > 32: one row per block. Every thread reads all of its elements
 * before it writes any, and no element is read by one thread and written by another, so
 * y == x and residual_out == residual are safe.
 *
 * STAGE (several rows per block: G ≤ 32, 16-byte vectors): the rows share one copy of the
 * weight and bias in shared memory, read from L2 once per block while the rows' loads are in
 * flight. Read from L2 per row instead, each vector's weight and then its bias is a round
 * trip after the reductions, one after the other (the register cap leaves no room to batch
 * them): with a bias or LayerNorm that wait, not the memory, sets the pace, and the shared
 * copy makes such rows 2-19% faster on an H100 at 256 to 2048 columns. A row with only a
 * weight gains less, and at G = 4 (or with a residual) the barrier that publishes the copy
 * costs more than it saves (1-3%): the plan leaves such rows reading the weight from L2.
 *
 * MIN_BLOCKS: resident blocks per SM for __launch_bounds__, which sets the register cap.
 * PLAIN (RMSNorm without a bias): the bias and LayerNorm code compiled out, so 2 vectors a
 * thread fit 32 registers.
 *
 * EARLY (one 16-byte vector a thread, few rows): each thread's weight and bias are loaded
 * with its row, into registers. With a row or less per SM nothing else fills the wait for
 * parameters loaded after the reductions: a second round trip on the launch's critical path.
 */
template <typename T, int VEC, bool RES, int G, int ITERS, int BLOCK, bool STAGE, int MIN_BLOCKS = min_blocks(BLOCK),
          bool PLAIN = false, bool EARLY = false>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) norm_rows_kernel(Params a) {
    using P = Pack<T, VEC>;
    constexpr int kRowsPerBlock = BLOCK / G;
    static_assert(!STAGE || (G <= kWarpSize && VEC * sizeof(T) == 16), "staged parameters: several rows a block");
    // KEEP, the short tail after the barrier of lessons 4 and 5's decode kernels. Measured on an
    // H100 at 1 to 128 rows of 4096 it gains 2-5% in the pre-norm step (a residual, compiled
    // without the bias and LayerNorm code), where the sum x + residual is not formed again; in
    // the kernel with that code it was up to 7% slower there, and 0-4% slower for the options
    // without a residual.
    constexpr bool KEEP = EARLY && PLAIN && RES;
    // Room for up to G · ITERS vectors of each parameter, fp32 ones taking two words each.
    constexpr int kStageWords = STAGE ? G * ITERS * (sizeof(T) == 2 ? 2 : 1) : 1;
    __shared__ alignas(16) Slots<G> slots;
    __shared__ uint4 stage_w[kStageWords];
    __shared__ uint4 stage_b[kStageWords];
    const int nvec = a.cols / VEC;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    int bank = 0;

    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < a.rows;
        const int64_t r = active ? row : 0;
        const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(r, a.heads, a.x_s0, a.x_s1));
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) +
                                                       row_offset(r, a.heads, a.r_s0, a.r_s1))
                          : nullptr;

        /// [load-row]
        P xv[ITERS], rv[RES ? ITERS : 1];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) {
                xv[i] = xr[idx];
                if constexpr (RES) rv[i] = rr[idx];
            }
        }
        // The parameters' 16-byte words (two for an fp32 vector beside 16-bit activations).
        uint4 w_words[EARLY ? 2 : 1], b_words[EARLY ? 2 : 1];
        if constexpr (EARLY) {
            static_assert(ITERS == 1 && VEC * sizeof(T) == 16, "early parameters: one 16-byte vector a thread");
            if (active && lane < nvec) {
                load_param_words<T>(a.weight, a.weight_f32, lane, w_words);
                if (!PLAIN && a.bias) load_param_words<T>(a.bias, a.bias_f32, lane, b_words);
            }
        }
        // After the loads are issued, so their wait covers the division.
        const float inv_cols = 1.0f / static_cast<float>(a.cols);
        // KEEP: x + residual and the weight stay in fp32 from here to the stores, so nothing is
        // unpacked or added again after the last reduction, on the launch's critical path.
        float s_keep[KEEP ? VEC : 1], w_keep[KEEP ? VEC : 1];
        if constexpr (KEEP) {
#pragma unroll
            for (int k = 0; k < VEC; ++k) s_keep[k] = w_keep[k] = 0.0f;
            if (active && lane < nvec) {
                sum_input<T, VEC, RES>(xv[0], rv[0], s_keep);
                load_param_staged<T, VEC>(w_words, a.weight_f32, 0, w_keep);
            }
        }
        // Vector i of x (+ residual) in fp32: kept (KEEP) or unpacked again.
        auto input_of = [&](int i, float(&s)[VEC]) {
            if constexpr (KEEP) {
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] = s_keep[k];
            } else {
                sum_input<T, VEC, RES>(xv[i], rv[RES ? i : 0], s);
            }
        };
        // residual_out leaves at once; its stores overlap the reductions.
        if (RES && a.residual_out && active) {
            P* ror = reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row_offset(r, a.heads, a.ro_s0, a.ro_s1));
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    float s[VEC];
                    input_of(i, s);
                    ror[idx] = pack<T, VEC>(s);
                }
            }
        }
        /// [load-row]
        /// [stage-params]
        // The block's copy of the parameters, once, while its rows' loads are in flight; the
        // barrier before the writes below publishes it.
        if constexpr (STAGE) {
            if (first == static_cast<int64_t>(blockIdx.x) * kRowsPerBlock) {
                const int w_words = nvec * (a.weight_f32 ? 2 : 1);
                const int b_words = (!PLAIN && a.bias) ? nvec * (a.bias_f32 ? 2 : 1) : 0;
#pragma unroll 1
                for (int j = threadIdx.x; j < w_words; j += BLOCK)
                    stage_w[j] = __ldg(static_cast<const uint4*>(a.weight) + j);
#pragma unroll 1
                for (int j = threadIdx.x; j < b_words; j += BLOCK)
                    stage_b[j] = __ldg(static_cast<const uint4*>(a.bias) + j);
            }
        }
        /// [stage-params]

        /// [two-pass-stats]
        // LayerNorm: the mean first, then the squares about it, both from registers. The
        // one-pass E[s²] − E[s]² loses every digit when the mean is large beside the spread.
        float mean = 0.0f;
        if (!PLAIN && a.layer) {
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (active && idx < nvec) {
                    float s[VEC];
                    input_of(i, s);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) sum += s[k];
                }
                if constexpr (!KEEP) {
                    keep_packed(xv[i]);
                    if constexpr (RES) keep_packed(rv[i]);
                }
            }
            mean = row_sum<G, KEEP>(sum, slots, bank) * inv_cols;
        }
        float sq = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) {
                float s[VEC];
                input_of(i, s);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float d = s[k] - mean;
                    sq = fmaf(d, d, sq);
                }
            }
            if constexpr (!KEEP) {
                keep_packed(xv[i]);
                if constexpr (RES) keep_packed(rv[i]);
            }
        }
        const float rstd = rsqrtf(row_sum<G, KEEP>(sq, slots, bank) * inv_cols + a.eps);
        /// [two-pass-stats]

        if constexpr (STAGE) __syncthreads();
        if (active) {
            if (a.rstd && lane == 0) a.rstd[rstd_index(r, a.heads, a.rstd_s0)] = rstd;
            P* yr = reinterpret_cast<P*>(static_cast<T*>(a.y) + row_offset(r, a.heads, a.y_s0, a.y_s1));
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    float s[VEC], w[VEC];
                    input_of(i, s);
                    if constexpr (KEEP) {
                        // The weight this thread converted before the reductions (no bias: PLAIN).
#pragma unroll
                        for (int k = 0; k < VEC; ++k) s[k] = s[k] * rstd * w_keep[k];
                        yr[idx] = pack<T, VEC>(s);
                        continue;
                    }
                    if constexpr (STAGE || EARLY) {
                        // The parameters from the block's copy, or (EARLY) from this thread's
                        // registers, which hold one vector's words at index 0.
                        const uint4* w_src = EARLY ? w_words : stage_w;
                        const uint4* b_src = EARLY ? b_words : stage_b;
                        const int at = EARLY ? 0 : idx;
                        load_param_staged<T, VEC>(w_src, a.weight_f32, at, w);
#pragma unroll
                        for (int k = 0; k < VEC; ++k) s[k] = (s[k] - mean) * rstd * w[k];
                        if (!PLAIN && a.bias) {
                            load_param_staged<T, VEC>(b_src, a.bias_f32, at, w);
#pragma unroll
                            for (int k = 0; k < VEC; ++k) s[k] += w[k];
                        }
                        yr[idx] = pack<T, VEC>(s);
                        continue;
                    }
                    load_param<T, VEC>(a.weight, a.weight_f32, idx, w);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] = (s[k] - mean) * rstd * w[k];
                    if (!PLAIN && a.bias) {
                        load_param<T, VEC>(a.bias, a.bias_f32, idx, w);
#pragma unroll
                        for (int k = 0; k < VEC; ++k) s[k] += w[k];
                    }
                    yr[idx] = pack<T, VEC>(s);
                }
            }
        }
    }
}

/// Welford's running (count, mean, M2) of one thread, merged with another's (Chan et al.).
/// ABOUT_ZERO: every mean is 0 (RMSNorm), so a merge only adds.
struct Welford {
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    template <bool ABOUT_ZERO = false>
    __device__ __forceinline__ void merge(float nb, float mb, float m2b) {
        if constexpr (ABOUT_ZERO) {
            n += nb;
            m2 += m2b;
            return;
        }
        const float total = n + nb;
        if (total == 0.0f) return;
        const float delta = mb - mean;
        // The fast division (2 ulp): an IEEE one is a call, and the registers it needs spill
        // the kernel's. The weights of a merge need no more.
        const float fb = __fdividef(nb, total);
        mean += delta * fb;
        m2 += m2b + delta * delta * n * fb;
        n = total;
    }
    /// Merges lane + offset's state into lane's, for offset = 16, 8, ... 1: lane 0 ends with the
    /// warp's, merged in the same order in every warp, so equal inputs give equal bits.
    template <bool ABOUT_ZERO>
    __device__ __forceinline__ void merge_down_warp() {
#pragma unroll
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            const float nb = __shfl_down_sync(0xffffffffu, n, offset);
            const float mb = __shfl_down_sync(0xffffffffu, mean, offset);
            const float m2b = __shfl_down_sync(0xffffffffu, m2, offset);
            merge<ABOUT_ZERO>(nb, mb, m2b);
        }
    }
};

/// [l2-priority]
/// How a pass of the two-pass kernel reads: plainly, or with an L2 eviction priority.
enum class L2Hint { kNone, kEvictLast, kEvictFirst };

/// One load of a pack. With a priority (16-byte packs only; PTX `createpolicy` and
/// `.L2::cache_hint`, which CUDA C++ has no intrinsic for): kEvictLast, this line is read again
/// soon, keep it over others; kEvictFirst, this is its last read, drop it first.
template <L2Hint H, typename P>
__device__ __forceinline__ P load_hinted(const P* p) {
    if constexpr (H == L2Hint::kNone) {
        return *p;
    } else {
        static_assert(sizeof(P) == 16, "the L2 policy rides on 16-byte loads");
        unsigned long long policy;
        if constexpr (H == L2Hint::kEvictLast) {
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
}
/// [l2-priority]

/// STEP vectors of x (and of the residual) from vector `base` on, BLOCK apart, all issued
/// before any is used.
template <L2Hint H, bool RES, int STEP, int BLOCK, typename P>
__device__ __forceinline__ void load_step(const P* xr, const P* rr, int base, int nvec, P (&xv)[STEP],
                                          P (&rv)[RES ? STEP : 1]) {
#pragma unroll
    for (int u = 0; u < STEP; ++u) {
        const int idx = base + u * BLOCK;
        if (idx < nvec) {
            xv[u] = load_hinted<H>(xr + idx);
            if constexpr (RES) rv[u] = load_hinted<H>(rr + idx);
        }
    }
}

/// What an instantiation of norm_two_pass_kernel compiles in: every option (read from the
/// parameters at run time), RMSNorm with a weight only, or RMSNorm with a weight and a bias.
enum class TwoPassCode { kAll, kRms, kRmsBias };

/// [welford]
/**
 * One block of BLOCK threads per row, the row read twice, STEP vectors a thread at a time.
 * The first read only gathers the statistics: LayerNorm folds each vector into the thread's
 * Welford state (the vector's own mean and M2 first, then one merge), so the row's mean and
 * variance come out of a single pass without cancellation; RMSNorm only sums squares. The
 * second read writes. Nothing is written before the barrier that ends the first read, and
 * each element is read and written by one thread: y == x and residual_out == residual are safe.
 *
 * Two uses:
 *  - KEEP_IN_L2 (16-byte accesses): long 16-bit RMSNorm rows, where pick_launcher's
 *    measurements put it ahead; lesson 4's and lesson 5's scheme. The first
 *    read marks its lines evict-last, so the second finds them in L2 (marked evict-first
 *    there) and DRAM moves each byte once; a thread needs only 2 vectors, so many more threads
 *    fit an SM than when it holds the row.
 *  - otherwise rows too long for registers that no cluster takes (narrow vectors, GPUs before
 *    sm_90): the second read comes mostly from L2 anyway.
 */
template <typename T, int VEC, bool RES, int BLOCK, int MIN_BLOCKS, int STEP, bool KEEP_IN_L2,
          TwoPassCode CODE = TwoPassCode::kAll, bool F32P = true>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) norm_two_pass_kernel(Params a) {
    using P = Pack<T, VEC>;
    constexpr bool kAboutZero = CODE != TwoPassCode::kAll;  // RMSNorm: every mean is 0
    const bool layer = !kAboutZero && a.layer;
    const bool bias = CODE != TwoPassCode::kRms && a.bias != nullptr;
    const bool weight_f32 = F32P && a.weight_f32, bias_f32 = F32P && a.bias_f32;
    constexpr L2Hint kFirstRead = KEEP_IN_L2 ? L2Hint::kEvictLast : L2Hint::kNone;
    constexpr L2Hint kSecondRead = KEEP_IN_L2 ? L2Hint::kEvictFirst : L2Hint::kNone;
    constexpr int kWarps = BLOCK / kWarpSize;
    // Two banks used in turn: a row's partials are written while the previous row's may
    // still be read, so one barrier a row is enough.
    __shared__ float slots[2][3][kWarps];
    const int nvec = a.cols / VEC;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    int bank = 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        // The row's outer index and head, divided once: each 64-bit division is a call whose
        // registers the kernel would otherwise spill around.
        const int64_t outer = a.heads == 1 ? row : row / a.heads;
        const int64_t head = row - outer * a.heads;
        const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + outer * a.x_s0 + head * a.x_s1);
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + outer * a.r_s0 + head * a.r_s1)
                          : nullptr;
        Welford w;
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += STEP * BLOCK) {
            P xv[STEP], rv[RES ? STEP : 1];
            load_step<kFirstRead, RES, STEP, BLOCK>(xr, rr, base, nvec, xv, rv);
#pragma unroll
            for (int u = 0; u < STEP; ++u) {
                if (base + u * BLOCK >= nvec) continue;
                float s[VEC];
                sum_input<T, VEC, RES>(xv[u], rv[RES ? u : 0], s);
                if (layer) {
                    float m = 0.0f;
#pragma unroll
                    for (int k = 0; k < VEC; ++k) m += s[k];
                    m *= 1.0f / VEC;
                    float m2 = 0.0f;
#pragma unroll
                    for (int k = 0; k < VEC; ++k) m2 = fmaf(s[k] - m, s[k] - m, m2);
                    w.merge(static_cast<float>(VEC), m, m2);
                } else {  // RMSNorm: squares about zero; the mean stays 0 through every merge
#pragma unroll
                    for (int k = 0; k < VEC; ++k) w.m2 = fmaf(s[k], s[k], w.m2);
                    w.n += static_cast<float>(VEC);
                }
            }
        }
        // The warp's state in lane 0, then every warp merges the block's in the same order.
        w.merge_down_warp<kAboutZero>();
        if (lane == 0) {
            slots[bank][0][warp] = w.n;
            slots[bank][1][warp] = w.mean;
            slots[bank][2][warp] = w.m2;
        }
        __syncthreads();
        Welford total;
        if (lane < kWarps) {
            total.n = slots[bank][0][lane];
            total.mean = slots[bank][1][lane];
            total.m2 = slots[bank][2][lane];
        }
        bank ^= 1;
        total.merge_down_warp<kAboutZero>();
        const float mean = layer ? __shfl_sync(0xffffffffu, total.mean, 0) : 0.0f;
        const float rstd = rsqrtf(__shfl_sync(0xffffffffu, total.m2, 0) * inv_cols + a.eps);
        if (a.rstd && threadIdx.x == 0) a.rstd[a.heads == 1 ? row : outer * a.rstd_s0 + head] = rstd;
        P* yr = reinterpret_cast<P*>(static_cast<T*>(a.y) + outer * a.y_s0 + head * a.y_s1);
        P* ror = RES && a.residual_out
                     ? reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + outer * a.ro_s0 + head * a.ro_s1)
                     : nullptr;
#pragma unroll 1
        for (int base = threadIdx.x; base < nvec; base += STEP * BLOCK) {
            // The step's inputs are all read before its outputs are written: y may be x.
            P xv[STEP], rv[RES ? STEP : 1];
            load_step<kSecondRead, RES, STEP, BLOCK>(xr, rr, base, nvec, xv, rv);
#pragma unroll
            for (int u = 0; u < STEP; ++u) {
                const int idx = base + u * BLOCK;
                if (idx >= nvec) continue;
                float s[VEC], f[VEC];
                sum_input<T, VEC, RES>(xv[u], rv[RES ? u : 0], s);
                if (ror) ror[idx] = pack<T, VEC>(s);
                load_param<T, VEC>(a.weight, weight_f32, idx, f);
#pragma unroll
                for (int k = 0; k < VEC; ++k) s[k] = (s[k] - mean) * rstd * f[k];
                if (bias) {
                    load_param<T, VEC>(a.bias, bias_f32, idx, f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] += f[k];
                }
                yr[idx] = pack<T, VEC>(s);
            }
        }
    }
}
/// [welford]

/// Sum over a cluster's blocks of BLOCK threads, every thread of every block gets it: each
/// warp's partial goes to its block's shared memory, one cluster barrier, then every warp reads
/// the partials of every block (distributed shared memory) in the same order, so all agree to
/// the bit. Two banks used in turn: a bank is written again only after the next reduction's
/// barrier or the row's closing one, which every thread reaches after its reads of this one.
template <int BLOCK>
__device__ __forceinline__ float cluster_sum(float v, float (*slots)[BLOCK / kWarpSize], int& bank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    constexpr int kWarps = BLOCK / kWarpSize;
    cg::cluster_group cluster = cg::this_cluster();
    const int parts = kWarps * static_cast<int>(cluster.num_blocks());
    const int lane = threadIdx.x % kWarpSize;
    v = group_sum<kWarpSize>(v);
    if (lane == 0) slots[bank][threadIdx.x / kWarpSize] = v;
    cluster.sync();
    float total = 0.0f;
    for (int j = lane; j < parts; j += kWarpSize)
        total += cluster.map_shared_rank(&slots[bank][0], j / kWarps)[j % kWarps];
    bank ^= 1;
    return group_sum<kWarpSize>(total);
#else
    return v;  // never launched below sm_90: launch_slice streams the row there
#endif
}

/// The slice kernel's block: 256 threads, three blocks an SM (3 × 64 KB of shared memory).
constexpr int kSliceBlock = 256;
constexpr int kSliceBlocksPerSm = 3;
/// Most bytes of a row one block keeps in shared memory, and the largest portable cluster.
constexpr int64_t kSliceBytes = 64 * 1024;
constexpr int kMaxCluster = 8;
/// Rows of more 16-byte vectors than this take the slice kernel when they carry a bias, a
/// residual or LayerNorm: the register kernel would need a block of 1024 threads, one per SM,
/// whose loads, reductions and writes no other block overlaps, and whose weight and bias
/// loads wait one behind the other (63-71% of the copy on an H100; the slice kernel 89-97%).
constexpr int kSliceMinVecs = 4096;

/// [slice-row]
/**
 * Rows too long for one block's registers, kept on chip (lesson 8's scheme): a cluster of
 * blocks per row, block `rank` holding vectors [rank · slice_vecs, (rank + 1) · slice_vecs)
 * of s = x (+ residual), rounded to T, in its shared memory between the statistics and the
 * writes. x and the residual are read from HBM once. The row no longer holds the registers,
 * so the write loop has four vectors' weight and bias in flight from L2 at a time. The
 * statistics come from the rounded sum, the residual_out the call returns, as the contract
 * allows. Every read of x precedes the cluster barrier that every write of y follows, and
 * residual_out[j] is written by the thread that just read residual[j]: y == x and
 * residual_out == residual are safe. F32P: a parameter is fp32 beside 16-bit activations.
 */
template <typename T, int VEC, bool RES, bool F32P>
__global__ void __launch_bounds__(kSliceBlock, kSliceBlocksPerSm) norm_slice_kernel(Params a, int slice_vecs) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    using P = Pack<T, VEC>;
    constexpr int kLoads = RES ? 2 : 4;  // vectors of x (and of the residual) in flight a thread
    constexpr int kWrites = 4;           // vectors of weight and bias in flight a thread
    extern __shared__ __align__(16) unsigned char slice_bytes[];
    P* slice = reinterpret_cast<P*>(slice_bytes);
    __shared__ Slots<kSliceBlock> slots;
    cg::cluster_group cluster = cg::this_cluster();
    const int blocks = static_cast<int>(cluster.num_blocks());
    const int rank = static_cast<int>(cluster.block_rank());
    const int nvec = a.cols / VEC;
    const int begin = rank * slice_vecs;
    const int count = std::min(std::max(nvec - begin, 0), slice_vecs);
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    int bank = 0;

    // Every block of a cluster walks the same rows, so the cluster barriers always match.
    for (int64_t row = blockIdx.x / blocks; row < a.rows; row += gridDim.x / blocks) {
        const P* xr =
            reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(row, a.heads, a.x_s0, a.x_s1)) + begin;
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) +
                                                       row_offset(row, a.heads, a.r_s0, a.r_s1)) + begin
                          : nullptr;
        P* ror = RES && a.residual_out ? reinterpret_cast<P*>(static_cast<T*>(a.residual_out) +
                                                               row_offset(row, a.heads, a.ro_s0, a.ro_s1)) + begin
                                       : nullptr;
        // The only read of x: kLoads vectors in flight, each parked in shared memory.
        float sum = 0.0f, sq = 0.0f;
#pragma unroll 1
        for (int base = threadIdx.x; base < count; base += kLoads * kSliceBlock) {
            P xv[kLoads], rv[RES ? kLoads : 1];
#pragma unroll
            for (int u = 0; u < kLoads; ++u) {
                const int j = base + u * kSliceBlock;
                if (j < count) {
                    xv[u] = xr[j];
                    if constexpr (RES) rv[u] = rr[j];
                }
            }
#pragma unroll
            for (int u = 0; u < kLoads; ++u) {
                const int j = base + u * kSliceBlock;
                if (j >= count) continue;
                float s[VEC];
                if constexpr (RES) {
                    sum_input<T, VEC, RES>(xv[u], rv[u], s);
                    xv[u] = pack<T, VEC>(s);
                    if (ror) ror[j] = xv[u];
                }
                slice[j] = xv[u];
                unpack(xv[u], s);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    sum += s[k];
                    sq = fmaf(s[k], s[k], sq);
                }
            }
        }
        // LayerNorm: the mean first, then the squares about it from this thread's own vectors
        // in shared memory (no barrier needed: a thread reads back what it wrote).
        float mean = 0.0f;
        if (a.layer) {
            mean = cluster_sum<kSliceBlock>(sum, slots, bank) * inv_cols;
            sq = 0.0f;
#pragma unroll 4
            for (int j = threadIdx.x; j < count; j += kSliceBlock) {
                float s[VEC];
                unpack(slice[j], s);
#pragma unroll
                for (int k = 0; k < VEC; ++k) sq = fmaf(s[k] - mean, s[k] - mean, sq);
            }
        }
        const float rstd = rsqrtf(cluster_sum<kSliceBlock>(sq, slots, bank) * inv_cols + a.eps);
        // Done reading the peers' slots: arrive now, wait at the end of the row. A block then
        // waits only for its peers' reads, never for their writes (a full barrier here, or at
        // the end, measured 3% slower with a bias on an H100).
        cluster.barrier_arrive();
        if (a.rstd && rank == 0 && threadIdx.x == 0)
            a.rstd[rstd_index(row, a.heads, a.rstd_s0)] = rstd;

        // The only write of y, from shared memory.
        P* yr = reinterpret_cast<P*>(static_cast<T*>(a.y) + row_offset(row, a.heads, a.y_s0, a.y_s1)) + begin;
        if constexpr (!F32P) {
#pragma unroll 1
            for (int base = threadIdx.x; base < count; base += kWrites * kSliceBlock) {
                P wv[kWrites], bv[kWrites];
#pragma unroll
                for (int u = 0; u < kWrites; ++u) {
                    const int j = base + u * kSliceBlock;
                    if (j < count) {
                        wv[u] = load_readonly(static_cast<const P*>(a.weight) + begin + j);
                        if (a.bias) bv[u] = load_readonly(static_cast<const P*>(a.bias) + begin + j);
                    }
                }
#pragma unroll
                for (int u = 0; u < kWrites; ++u) {
                    const int j = base + u * kSliceBlock;
                    if (j >= count) continue;
                    float s[VEC], f[VEC];
                    unpack(slice[j], s);
                    unpack(wv[u], f);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] = (s[k] - mean) * rstd * f[k];
                    if (a.bias) {
                        unpack(bv[u], f);
#pragma unroll
                        for (int k = 0; k < VEC; ++k) s[k] += f[k];
                    }
                    yr[j] = pack<T, VEC>(s);
                }
            }
        } else {
            // An fp32 weight: kWrites vectors of it in flight as raw 16-byte words (two a
            // vector). An fp32 bias beside it, which no timed option uses, is read per vector.
            static_assert(!F32P || (sizeof(T) == 2 && VEC == 8), "fp32 parameters beside 16-bit rows");
            constexpr int kQ = VEC * 4 / 16;
#pragma unroll 1
            for (int base = threadIdx.x; base < count; base += kWrites * kSliceBlock) {
                uint4 wq[kWrites][kQ];
#pragma unroll
                for (int u = 0; u < kWrites; ++u) {
                    const int j = base + u * kSliceBlock;
                    if (j < count) {
                        if (a.weight_f32) {
#pragma unroll
                            for (int q = 0; q < kQ; ++q)
                                wq[u][q] = __ldg(static_cast<const uint4*>(a.weight) +
                                                 static_cast<int64_t>(begin + j) * kQ + q);
                        } else {
                            wq[u][0] = __ldg(static_cast<const uint4*>(a.weight) + begin + j);
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < kWrites; ++u) {
                    const int j = base + u * kSliceBlock;
                    if (j >= count) continue;
                    float s[VEC], f[VEC];
                    unpack(slice[j], s);
                    if (a.weight_f32) {
#pragma unroll
                        for (int q = 0; q < kQ; ++q) {
                            float g[4];
                            unpack(*reinterpret_cast<const Pack<float, 4>*>(&wq[u][q]), g);
#pragma unroll
                            for (int k = 0; k < 4; ++k) f[4 * q + k] = g[k];
                        }
                    } else {
                        unpack(*reinterpret_cast<const P*>(&wq[u][0]), f);
                    }
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s[k] = (s[k] - mean) * rstd * f[k];
                    if (a.bias) {
                        load_param<T, VEC>(a.bias, a.bias_f32, begin + j, f);
#pragma unroll
                        for (int k = 0; k < VEC; ++k) s[k] += f[k];
                    }
                    yr[j] = pack<T, VEC>(s);
                }
            }
        }
        // No block leaves, or overwrites its slots for the next row, while a peer may still
        // read them.
        cluster.barrier_wait();
    }
#endif
}
/// [slice-row]

int grid_for(int64_t groups) { return static_cast<int>(std::min<int64_t>(std::max<int64_t>(groups, 1), kMaxGrid)); }

template <typename T, int VEC, bool RES, int G, int ITERS, bool STAGE = false>
cudaError_t launch_rows(const Params& a, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    norm_rows_kernel<T, VEC, RES, G, ITERS, kBlock, STAGE>
        <<<grid_for((a.rows + kRowsPerBlock - 1) / kRowsPerBlock), kBlock, 0, stream>>>(a);
    return cudaGetLastError();
}

using Launcher = cudaError_t (*)(const Params&, cudaStream_t);

/// One row per block of G threads, one 16-byte vector a thread, its parameters loaded with it.
/// PLAIN: RMSNorm without a bias, compiled without the bias and LayerNorm code (and, beside a
/// residual, with the short tail: norm_rows_kernel's KEEP).
template <typename T, int VEC, bool RES, int G, bool PLAIN = false>
cudaError_t launch_few(const Params& a, cudaStream_t stream) {
    norm_rows_kernel<T, VEC, RES, G, 1, G, false, min_blocks(G), PLAIN, true><<<grid_for(a.rows), G, 0, stream>>>(a);
    return cudaGetLastError();
}

/// launch_few for these rows: PLAIN when there is no bias and no LayerNorm.
template <typename T, int VEC, bool RES, int G>
Launcher few_launcher(bool heavy) {
    return heavy ? &launch_few<T, VEC, RES, G> : &launch_few<T, VEC, RES, G, true>;
}

/// [decode-rows]
/// Decode batches of 2-D rows with parameters in T (at most kEarlyParamRows rows of 257 to 1024
/// 16-byte vectors): lessons 4 and 5's decode kernel with this lesson's options. One row a
/// block of BLOCK threads, two vectors a thread, no row loop; the row, the residual, the weight
/// and (BIAS) the bias are all loaded first, x + residual and the weight converted to fp32
/// before the first barrier, and every thread adds the warps' partials itself, so after the
/// last barrier only the products and the stores remain. Plain loads for the parameters:
/// nothing is stored before them, so the read-only path has nothing to overtake. LAYER: the
/// mean first, then the squares about it, each through its own bank of partials, so the
/// second sum needs no barrier before its writes.
///
/// Performance: with one block or a few on an idle GPU the time is one block's path from launch
/// to its last store, and that path is short only in a kernel with little code. Measured on an
/// H100 (1, 16 and 128 rows of 4096 and 7168 columns, plain, bias + rstd and pre-norm, both
/// 16-bit dtypes, two processes): 3-12% faster than the few-rows row kernel it replaces here,
/// level with lesson 4's decode kernel on the plain rows; a build of the same LAYER design was
/// 5-12% faster on every LayerNorm row. The same kernel with the 3-D row offset and fp32 parameters as runtime
/// branches was only 0-8% faster, and slower in bf16 with a bias or a residual: those rows
/// keep the row kernel (launch_few).
template <typename T, int VEC, bool RES, bool BIAS, int BLOCK, bool LAYER>
__global__ void __launch_bounds__(BLOCK) norm_decode_kernel(Params a) {
    constexpr int ITERS = 2;
    constexpr int kWarps = BLOCK / kWarpSize;
    constexpr int kSlots = (kWarps + 3) / 4 * 4;
    static_assert(VEC * sizeof(T) == 16, "the decode kernel moves 16-byte vectors");
    using P = Pack<T, VEC>;
    __shared__ alignas(16) float partials[LAYER ? 2 : 1][kSlots];
    const int nvec = a.cols / VEC;
    const int64_t row = blockIdx.x;
    const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row * a.x_s0);
    const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + row * a.r_s0) : nullptr;
    const P* w = static_cast<const P*>(a.weight);
    const P* b = static_cast<const P*>(a.bias);
    P xv[ITERS], rv[RES ? ITERS : 1], wv[ITERS], bv[BIAS ? ITERS : 1];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) {
            xv[i] = xr[idx];
            if constexpr (RES) rv[i] = rr[idx];
            wv[i] = w[idx];
            if constexpr (BIAS) bv[i] = b[idx];
        }
    }
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    float s[ITERS][VEC], g[ITERS][VEC];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        if (threadIdx.x + i * BLOCK < nvec) {
            sum_input<T, VEC, RES>(xv[i], rv[RES ? i : 0], s[i]);
            unpack(wv[i], g[i]);
        }
    }
    // residual_out leaves at once; its stores overlap the reduction.
    if (RES && a.residual_out) {
        P* ror = reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row * a.ro_s0);
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = threadIdx.x + i * BLOCK;
            if (idx < nvec) ror[idx] = pack<T, VEC>(s[i]);
        }
    }
    // A bank's slots past the last warp's are zeroed, so every thread reads whole float4s.
    auto block_sum = [&](float v, float* bank) {
        v = group_sum<kWarpSize>(v);
        if (threadIdx.x % kWarpSize == 0) bank[threadIdx.x / kWarpSize] = v;
        if (kSlots > kWarps && threadIdx.x < kSlots - kWarps) bank[kWarps + threadIdx.x] = 0.0f;
        __syncthreads();
        float total = 0.0f;
#pragma unroll
        for (int k = 0; k < kSlots; k += 4) {
            const float4 q = *reinterpret_cast<const float4*>(&bank[k]);
            total += (q.x + q.y) + (q.z + q.w);
        }
        return total;
    };
    float mean = 0.0f;
    if constexpr (LAYER) {
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            if (threadIdx.x + i * BLOCK < nvec) {
#pragma unroll
                for (int k = 0; k < VEC; ++k) sum += s[i][k];
            }
        }
        mean = block_sum(sum, partials[1]) * inv_cols;
    }
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        if (threadIdx.x + i * BLOCK < nvec) {
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float d = s[i][k] - mean;
                sq = fmaf(d, d, sq);
            }
        }
    }
    const float rstd = rsqrtf(block_sum(sq, partials[0]) * inv_cols + a.eps);
    if (a.rstd && threadIdx.x == 0) a.rstd[row] = rstd;
    P* yr = reinterpret_cast<P*>(static_cast<T*>(a.y) + row * a.y_s0);
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = threadIdx.x + i * BLOCK;
        if (idx < nvec) {
            float f[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) f[k] = (s[i][k] - mean) * rstd * g[i][k];
            if constexpr (BIAS) {
                float c[VEC];
                unpack(bv[i], c);
#pragma unroll
                for (int k = 0; k < VEC; ++k) f[k] += c[k];
            }
            yr[idx] = pack<T, VEC>(f);
        }
    }
}

/// norm_decode_kernel for these rows, with the bias's code only when there is a bias.
template <typename T, int VEC, bool RES, int BLOCK, bool LAYER>
cudaError_t launch_decode(const Params& a, cudaStream_t stream) {
    auto kernel = a.bias ? norm_decode_kernel<T, VEC, RES, true, BLOCK, LAYER>
                         : norm_decode_kernel<T, VEC, RES, false, BLOCK, LAYER>;
    kernel<<<static_cast<int>(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}

/// launch_decode for rows of nvec vectors, two a thread in the warps they need.
template <typename T, int VEC, bool RES>
Launcher decode_launcher(int nvec, bool layer) {
    auto pick = [&](auto block) -> Launcher {
        constexpr int B = decltype(block)::value;
        return layer ? &launch_decode<T, VEC, RES, B, true> : &launch_decode<T, VEC, RES, B, false>;
    };
    if (nvec <= 512) return pick(std::integral_constant<int, 256>{});
    if (nvec <= 640) return pick(std::integral_constant<int, 320>{});
    if (nvec <= 768) return pick(std::integral_constant<int, 384>{});
    if (nvec <= 896) return pick(std::integral_constant<int, 448>{});
    return pick(std::integral_constant<int, 512>{});
}
/// [decode-rows]

/// [wide-rows]
/// One row per block of G threads holding 2 vectors each, at 1536 resident threads an SM
/// (40 registers), for rows with a bias or LayerNorm. Their weight and bias loads wait after
/// the reductions; with more, smaller threads resident, other rows' loads fill that wait.
template <typename T, int VEC, bool RES, int G>
cudaError_t launch_wide(const Params& a, cudaStream_t stream) {
    constexpr int kResidentThreads = 1536;
    norm_rows_kernel<T, VEC, RES, G, 2, G, false, kResidentThreads / G><<<grid_for(a.rows), G, 0, stream>>>(a);
    return cudaGetLastError();
}
/// [wide-rows]

/// [plain-rows]
/// One row per block of G threads holding 2 vectors each, for rows without a bias or LayerNorm:
/// the kernel compiled without that code (PLAIN) fits 32 registers, so the SM runs 2048 threads
/// (1536 at 40 registers beside a residual), lesson 4's full occupancy.
template <typename T, int VEC, bool RES, int G>
cudaError_t launch_plain(const Params& a, cudaStream_t stream) {
    constexpr int kResidentThreads = RES ? 1536 : 2048;
    norm_rows_kernel<T, VEC, RES, G, 2, G, false, kResidentThreads / G, true><<<grid_for(a.rows), G, 0, stream>>>(a);
    return cudaGetLastError();
}
/// [plain-rows]

/// Rows too long for registers that no cluster takes: two plain reads, 1024 threads a row,
/// 2 vectors a thread in flight (1 of each input beside a residual).
template <typename T, int VEC, bool RES>
cudaError_t launch_stream(const Params& a, cudaStream_t stream) {
    norm_two_pass_kernel<T, VEC, RES, 1024, 1, RES ? 1 : 2, false><<<grid_for(a.rows), 1024, 0, stream>>>(a);
    return cudaGetLastError();
}

/// [two-pass-l2-launch]
/// One row per block of BLOCK threads, read twice through the L2, 2 vectors (of each input) a
/// thread, RESIDENT threads an SM (which sets the register cap): RMSNorm with parameters in T,
/// the LayerNorm and fp32 code compiled out, and the bias's too unless CODE is kRmsBias.
template <typename T, int VEC, bool RES, int BLOCK, int RESIDENT, TwoPassCode CODE = TwoPassCode::kRms>
cudaError_t launch_two_pass_l2(const Params& a, cudaStream_t stream) {
    norm_two_pass_kernel<T, VEC, RES, BLOCK, RESIDENT / BLOCK, 2, true, CODE, false>
        <<<grid_for(a.rows), BLOCK, 0, stream>>>(a);
    return cudaGetLastError();
}
/// [two-pass-l2-launch]

/// [cluster-launch]
/// A row over the shared memory of a cluster: the fewest blocks (a power of two, at most 8)
/// whose slices hold at most 64 KB each (2 for a 16-bit row of 65536, 4 for an fp32 one).
/// Clusters exist from sm_90 on; below that the row is streamed instead.
template <typename T, int VEC, bool RES>
cudaError_t launch_slice(const Params& a, cudaStream_t stream) {
    int device = 0, major = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err != cudaSuccess) return err;
    if (major < 9) return launch_stream<T, VEC, RES>(a, stream);
    constexpr int64_t kVecBytes = sizeof(T) * VEC;
    const int nvec = a.cols / VEC;
    int cluster = 1;
    while (cluster < kMaxCluster && (nvec + cluster - 1) / cluster * kVecBytes > kSliceBytes) cluster *= 2;
    const int slice_vecs = (nvec + cluster - 1) / cluster;
    const size_t smem = static_cast<size_t>(slice_vecs) * kVecBytes;
    auto kernel = norm_slice_kernel<T, VEC, RES, false>;
    if constexpr (sizeof(T) == 2) {
        if (a.weight_f32 || a.bias_f32) kernel = norm_slice_kernel<T, VEC, RES, true>;
    }
    // Above 48 KB of dynamic shared memory a kernel has to opt in.
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (err != cudaSuccess) return err;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    // One cluster per row; past grid.x's limit the clusters walk the rows.
    config.gridDim = dim3(static_cast<unsigned>(std::min<int64_t>(a.rows, kMaxGrid / cluster) * cluster));
    config.blockDim = dim3(kSliceBlock);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, a, slice_vecs);
}
/// [cluster-launch]

/// Several rows a block (G ≤ 32) share a copy of the parameters in shared memory when the
/// rows have a bias or are LayerNorm (`heavy`), or have a lone weight in groups of 8 or more
/// threads without a residual (norm_rows_kernel says why).
template <typename T, int VEC, bool RES, int G, int ITERS>
Launcher rows_launcher(bool heavy) {
    if constexpr (G <= kWarpSize && VEC * sizeof(T) == 16) {
        if (heavy || (!RES && G >= 8)) return &launch_rows<T, VEC, RES, G, ITERS, true>;
    }
    return &launch_rows<T, VEC, RES, G, ITERS>;
}

/// [fast-memory-plan]
/// The plan for more than kFewRows 16-bit RMSNorm rows (no LayerNorm, so `bias` is pick_launcher's
/// `heavy`) on fast memory (an H200), or nullptr where the H100's plan (pick_launcher) applies.
/// There DRAM is 1.4 times as fast beside the same L2: reading a row twice through the L2 costs
/// time where it saved it on the H100, and 4 vectors a thread in threads that fit the row keep
/// more bytes in flight than 2. Measured on an H200 (bf16, one process, two rounds, against the
/// H100's plan, calls of 32 MiB moved or more; performance.md, "On an H200"): 5120 to 7168 columns 7-18%
/// faster, 8192 to 16384 columns 4-10%, a bias at 4096 columns 6% and at 256 columns 6%, beside a
/// residual 1024 columns 3%.
template <typename T, int VEC, bool RES>
Launcher fast_memory_launcher(int nvec, bool bias, bool f32_params) {
    if constexpr (RES) {
        if (bias || f32_params) return nullptr;  // not measured beside a residual
        if (nvec > 64 && nvec <= 128) return &launch_rows<T, VEC, RES, 64, 2>;
        if (nvec > 640 && nvec <= 768) return &launch_rows<T, VEC, RES, 192, 4>;
        if (nvec > 768 && nvec <= 896) return &launch_rows<T, VEC, RES, 224, 4>;
        // 897 to 1024 vectors keep the H100's plan: 2 vectors a thread gained under 1% in place,
        // and at the gate's pre-norm 16384 x 8192 (out of place) the reference became fast enough
        // to put the straightforward kernel (grader/tests/straightforward) below the gate, 0.791.
        if (nvec > 1024 && nvec <= 2048) return &launch_plain<T, VEC, RES, 1024>;
        return nullptr;
    } else {
        if (bias && f32_params) return nullptr;  // not measured
        if (bias) {
            if (nvec > 16 && nvec <= 32) return rows_launcher<T, VEC, RES, 4, 8>(true);
            if (nvec > 64 && nvec <= 128) return rows_launcher<T, VEC, RES, 16, 8>(true);
            if (nvec > 256 && nvec <= 512) return &launch_rows<T, VEC, RES, 128, 4>;
            if (nvec > 896 && nvec <= 1024) return &launch_rows<T, VEC, RES, 256, 4>;
        } else if (nvec > 896 && nvec <= 1024) {
            return &launch_plain<T, VEC, RES, 512>;  // 2 vectors a thread: 1.5-2.6% ahead of 4 here
        }
        if (nvec > 512 && nvec <= 640) return &launch_rows<T, VEC, RES, 160, 4>;
        if (nvec > 640 && nvec <= 768) return &launch_rows<T, VEC, RES, 192, 4>;
        if (nvec > 768 && nvec <= 896) return &launch_rows<T, VEC, RES, 224, 4>;
        if (nvec > 1024 && nvec <= 2048) return &launch_rows<T, VEC, RES, 256, 8>;
        return nullptr;
    }
}
/// [fast-memory-plan]

/// [launch-plan]
/// The plan for `rows` rows of `nvec` vectors. Each thread holds K vectors (8 of x, or 4 of x
/// and 4 of the residual: 32 registers of row either way; twice as many narrower than 16
/// bytes), G threads per row, the fewest
/// (a power of two) that hold it. Past 4096 16-byte vectors the row goes to a cluster's
/// shared memory, unless it is not `heavy` (RMSNorm, no bias) and a 1024-thread block holds
/// it: with one parameter load a vector that block keeps up (the slice kernel measured 1-3%
/// slower there). A longer row of narrower vectors (misaligned) is streamed. Few rows (a
/// decode step) fill few SMs and the time is latency: there each thread takes one or two
/// vectors. `flat`: one row per outer index (heads == 1), so a row's offset is row · stride.
/// `fast_memory`: the call may take fast_memory_launcher's plan (norm_create decides).
template <typename T, int VEC, bool RES>
Launcher pick_launcher(int nvec, int64_t rows, bool heavy, bool layer, bool f32_params, bool flat, bool fast_memory) {
    // Accesses narrower than 16 bytes (columns or pointers that rule out 16-byte vectors)
    // carry so little that a thread needs twice as many in flight, as in lesson 4.
    constexpr int K = VEC * sizeof(T) == 16 ? (RES ? 4 : 8) : 16;
    if constexpr (VEC * sizeof(T) == 16) {
        // At most one row an SM: the parameters join the row's loads. Measured on an H100 at
        // 4096 columns, every option, 1 to 128 rows: 2-15% faster; at 256 rows up to 2% slower.
        // 2-D rows with parameters in T take the decode kernel, whose code has no branch for
        // the options they do not use (norm_decode_kernel says what it gains).
        if (rows <= kEarlyParamRows && nvec > 256 && nvec <= 1024 && flat && !f32_params)
            return decode_launcher<T, VEC, RES>(nvec, layer);
        if (rows <= kEarlyParamRows && nvec > 64) {
            if (nvec <= 128) return few_launcher<T, VEC, RES, 128>(heavy);
            if (nvec <= 256) return few_launcher<T, VEC, RES, 256>(heavy);
            if (nvec <= 512) return few_launcher<T, VEC, RES, 512>(heavy);
            if (nvec <= 1024) return few_launcher<T, VEC, RES, 1024>(heavy);
        }
        if (rows <= kFewRows && nvec > 64) {
            if (nvec <= 128) return &launch_rows<T, VEC, RES, 128, 1>;
            if (nvec <= 256) return &launch_rows<T, VEC, RES, 256, 1>;
            if (nvec <= 512) return &launch_rows<T, VEC, RES, 512, 1>;
            if (nvec <= 1024) return &launch_rows<T, VEC, RES, 1024, 1>;
            if (nvec <= 2048) return &launch_rows<T, VEC, RES, 1024, 2>;
        }
    }
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (fast_memory) {
            if (Launcher fast = fast_memory_launcher<T, VEC, RES>(nvec, heavy, f32_params)) return fast;
        }
    }
    // 65 to 128 vectors (1024 16-bit columns) without a residual: a warp per row, 4 vectors
    // per thread, rather than 16 threads of 8: measured on an H100 2-3% faster with a bias
    // (each thread's weight and bias loads wait behind fewer stores), the same without.
    if constexpr (VEC * sizeof(T) == 16 && !RES) {
        if (nvec > 64 && nvec <= 128) return rows_launcher<T, VEC, RES, 32, 4>(heavy);
    }
    if constexpr (VEC * sizeof(T) == 16) {
        if (nvec > kSliceMinVecs && (heavy || nvec > 1024 * K)) return &launch_slice<T, VEC, RES>;
    }
    // 16-bit RMSNorm rows with parameters in T, read twice through the L2 (norm_two_pass_kernel,
    // KEEP_IN_L2): the first read keeps the row there, so the second costs no DRAM traffic and a
    // thread holds 2 vectors of each input, not the row. Measured on an H100 (bf16, both orders,
    // against the register-held plans below):
    //  - beside a residual (no bias), 2049 to 16384 columns from 128 MiB of input (lesson 5's
    //    rule): +0.8-1.7% on every such shape, 4096 x 8192 to 16384 x 16384;
    //  - without one, 6144 to 16384 columns: level at 6144, +0.5% at 7168, +1.2-2.6% at 8192
    //    (1536 threads an SM; at 2048 the kernel spills and only draws level), +0.1-0.4% at
    //    16384; at 5120 columns 1-1.3% slower, at 32768 1%;
    //  - with a bias, 7168 to 16384 columns, 2048 threads an SM (32 registers, 8 bytes spilled):
    //    +0.3-0.9% at 8192, +1.9% at 7168, +0.8-2.9% at 16384; at 6144 (512 threads, a quarter
    //    of them with one vector) 2.6% slower. At 1536 threads an SM: fp16 16384 columns faster
    //    (below), 8192 columns 0-2.1% slower; 32768 columns (512 threads) 10-11% slower.
    // LayerNorm needs more registers (its Welford merges): at 1024-2048 threads an SM it was
    // 4-35% slower than the register-held row; fp32 parameters 1.5-25% slower.
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (!layer && !f32_params) {
            if constexpr (RES) {
                const int64_t input_bytes = 2 * rows * nvec * 16;
                if (!heavy && nvec > 256 && nvec <= 2048 && input_bytes >= kTwoPassL2MinBytes) {
                    if (nvec <= 512) return &launch_two_pass_l2<T, VEC, RES, 256, 1024>;
                    if (nvec <= 640) return &launch_two_pass_l2<T, VEC, RES, 320, 1024>;
                    if (nvec <= 1024) return &launch_two_pass_l2<T, VEC, RES, 512, 1024>;
                    return &launch_two_pass_l2<T, VEC, RES, 1024, 1024>;
                }
            } else if (!heavy) {
                if (nvec > 640 && nvec <= 896) return &launch_two_pass_l2<T, VEC, RES, 512, 2048>;
                if (nvec > 896 && nvec <= 1024) return &launch_two_pass_l2<T, VEC, RES, 512, 1536>;
                if (nvec > 1024 && nvec <= 2048) return &launch_two_pass_l2<T, VEC, RES, 1024, 2048>;
            } else {  // a bias
                constexpr TwoPassCode kBias = TwoPassCode::kRmsBias;
                if (nvec > 768 && nvec <= 1024) return &launch_two_pass_l2<T, VEC, RES, 512, 2048, kBias>;
                if (nvec > 1024 && nvec <= 2048) {
                    // fp16 at 16384 columns: 512-thread blocks at 1536 threads an SM (40 registers)
                    // measured 1.1-1.7% faster than 1024 at 2048; bf16 level (-0.7 to +0.2%).
                    if constexpr (std::is_same_v<T, __half>) return &launch_two_pass_l2<T, VEC, RES, 512, 1536, kBias>;
                    return &launch_two_pass_l2<T, VEC, RES, 1024, 2048, kBias>;
                }
            }
        }
    }
    // 16-bit rows of 257 to 2048 vectors without a bias or LayerNorm: 2 vectors a thread in the
    // PLAIN kernel. Measured on an H100 against 8 vectors (4 and 4 beside a residual) at 64
    // registers, both orders, bf16 and fp16: +0.5-2% from 8192 to 16384 columns (fp32 weight
    // at 8192 × 16384 +1.8%), level at 2048 and 4096.
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2) {
        if (!heavy && nvec > 256 && nvec <= 2048) {
            if (nvec <= 512) return &launch_plain<T, VEC, RES, 256>;
            if (nvec <= 1024) return &launch_plain<T, VEC, RES, 512>;
            return &launch_plain<T, VEC, RES, 1024>;
        }
    }
    // 16-bit rows of 257 to 1024 vectors (2049 to 8192 columns) with a bias or LayerNorm, no residual:
    // 2 vectors a thread at 1536 threads an SM rather than 8 at 1024. Measured on an H100
    // (bf16, against the 8-vector plan in the same process, both orders): with a bias +3% at
    // 32768 × 4096, +2.5% at 16384 × 8192, +5-6% at 4096 × 8192; LayerNorm +3.5% at
    // 32768 × 4096 and +1-3% at 4096 × 8192, but -1.4% at 16384 × 8192, where its two block
    // reductions over 16 warps cost more than the extra threads save once the rows fill many
    // waves: LayerNorm rows past 512 vectors keep 8 vectors a thread when there are more than
    // 8192 of them.
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2 && !RES) {
        if (heavy && nvec > 256 && nvec <= 1024 && !(layer && nvec > 512 && rows > 8192)) {
            // As many threads as the row has pairs of vectors, in whole warps (the block
            // reduction takes any number of them): 5120, 6144 and 7168 columns leave no
            // thread idle.
            if (nvec <= 512) return &launch_wide<T, VEC, RES, 256>;
            if (nvec <= 640) return &launch_wide<T, VEC, RES, 320>;
            if (nvec <= 768) return &launch_wide<T, VEC, RES, 384>;
            if (nvec <= 896) return &launch_wide<T, VEC, RES, 448>;
            return &launch_wide<T, VEC, RES, 512>;
        }
    }
    // 16-bit rows of 17 to 64 vectors (129 to 512 columns) without a residual: fewer vectors a
    // thread, more threads a row (2 a thread without a bias, 4 with one or LayerNorm). Measured
    // on an H100 against 8 vectors a thread, both orders: at 256 columns +5-8% plain, +2-3%
    // LayerNorm, 0-4% with a bias; at 512 columns +1-2%.
    if constexpr (VEC * sizeof(T) == 16 && sizeof(T) == 2 && !RES) {
        if (nvec > 16 && nvec <= 32)
            return heavy ? rows_launcher<T, VEC, RES, 8, 4>(true) : rows_launcher<T, VEC, RES, 16, 2>(false);
        if (nvec > 32 && nvec <= 64)
            return heavy ? rows_launcher<T, VEC, RES, 16, 4>(true) : rows_launcher<T, VEC, RES, 32, 2>(false);
    }
    if (nvec <= 4 * K) return rows_launcher<T, VEC, RES, 4, K>(heavy);
    if (nvec <= 8 * K) return rows_launcher<T, VEC, RES, 8, K>(heavy);
    if (nvec <= 16 * K) return rows_launcher<T, VEC, RES, 16, K>(heavy);
    if (nvec <= 32 * K) return rows_launcher<T, VEC, RES, 32, K>(heavy);
    if (nvec <= 64 * K) return &launch_rows<T, VEC, RES, 64, K>;
    if (nvec <= 128 * K) return &launch_rows<T, VEC, RES, 128, K>;
    if (nvec <= 256 * K) return &launch_rows<T, VEC, RES, 256, K>;
    if (nvec <= 512 * K) return &launch_rows<T, VEC, RES, 512, K>;
    if (nvec <= 1024 * K) return &launch_rows<T, VEC, RES, 1024, K>;
    return &launch_stream<T, VEC, RES>;
}
/// [launch-plan]

template <typename T>
Launcher pick_for_type(int vec, bool res, int nvec, int64_t rows, bool heavy, bool layer, bool f32_params, bool flat,
                       bool fast_memory) {
    constexpr int kFull = 16 / sizeof(T);
    if (vec == kFull)
        return res ? pick_launcher<T, kFull, true>(nvec, rows, heavy, layer, f32_params, flat, fast_memory)
                   : pick_launcher<T, kFull, false>(nvec, rows, heavy, layer, f32_params, flat, fast_memory);
    return res ? pick_launcher<T, 1, true>(nvec, rows, heavy, layer, f32_params, flat, fast_memory)
               : pick_launcher<T, 1, false>(nvec, rows, heavy, layer, f32_params, flat, fast_memory);
}

// ----------------------------------------------------------------------------- validation

size_t dtype_bytes(DataType t) { return t == DataType::f32 ? 4 : 2; }
bool known_dtype(DataType t) { return t == DataType::f32 || t == DataType::f16 || t == DataType::bf16; }
bool present(const TensorDesc& t) { return t.data != nullptr; }

/// Bytes from a tensor's first element to one past its last ([0, 0) when it is empty).
struct Span {
    uintptr_t begin = 0, end = 0;
    bool empty() const { return begin == end; }
    bool meets(const Span& o) const { return !empty() && !o.empty() && begin < o.end && o.begin < end; }
};
Span span_of(const TensorDesc& t) {
    int64_t last = 0;
    for (int d = 0; d < t.rank; ++d) {
        if (t.shape[d] == 0) return {};
        last += (t.shape[d] - 1) * t.stride[d];
    }
    const uintptr_t b = reinterpret_cast<uintptr_t>(t.data);
    return {b, b + static_cast<uintptr_t>(last + 1) * dtype_bytes(t.dtype)};
}

/// True when no two rows of the tensor share an element: the outer dimensions, sorted by
/// stride, each step past the extent of everything inside it.
bool rows_apart(const TensorDesc& t) {
    // Outer dimensions from the innermost (smallest stride) out: at most two of them.
    int dims[2] = {0, 0};
    const int outer = t.rank - 1;
    if (outer == 2) {
        dims[0] = t.stride[1] <= t.stride[0] ? 1 : 0;
        dims[1] = 1 - dims[0];
    }
    int64_t extent = t.shape[t.rank - 1];  // the last dimension, stride 1
    for (int i = 0; i < outer; ++i) {
        const int d = dims[i];
        if (t.stride[d] < 0) return false;
        if (t.shape[d] <= 1) continue;
        if (t.stride[d] < extent) return false;
        extent = t.stride[d] * (t.shape[d] - 1) + extent;
    }
    return true;
}

/// Same data pointer and same strides: the one kind of overlap the contract allows.
bool same_tensor(const TensorDesc& a, const TensorDesc& b) {
    if (a.data != b.data || a.rank != b.rank) return false;
    for (int d = 0; d < a.rank; ++d)
        if (a.stride[d] != b.stride[d]) return false;
    return true;
}

/// [validate]
Status validate(const NormProblem& p) {
    const TensorDesc* acts[] = {&p.x, &p.residual, &p.y, &p.residual_out};
    const TensorDesc* vecs[] = {&p.weight, &p.bias};
    if (!present(p.x) || !present(p.weight) || !present(p.y)) return Status::missing_tensor;
    if (present(p.residual_out) && !present(p.residual)) return Status::missing_tensor;

    const int rank = p.x.rank;
    if (rank != 2 && rank != 3) return Status::bad_rank;
    for (const TensorDesc* t : acts)
        if (present(*t) && t->rank != rank) return Status::bad_rank;
    for (const TensorDesc* t : vecs)
        if (present(*t) && t->rank != 1) return Status::bad_rank;
    if (present(p.rstd) && p.rstd.rank != rank - 1) return Status::bad_rank;

    for (const TensorDesc* t : {&p.x, &p.residual, &p.y, &p.residual_out, &p.weight, &p.bias, &p.rstd})
        if (present(*t))
            for (int d = 0; d < t->rank; ++d)
                if (t->shape[d] < 0) return Status::negative_dimension;

    const int64_t cols = p.x.shape[rank - 1];
    for (const TensorDesc* t : acts)
        if (present(*t))
            for (int d = 0; d < rank; ++d)
                if (t->shape[d] != p.x.shape[d]) return Status::shape_mismatch;
    for (const TensorDesc* t : vecs)
        if (present(*t) && t->shape[0] != cols) return Status::shape_mismatch;
    if (present(p.rstd))
        for (int d = 0; d < rank - 1; ++d)
            if (p.rstd.shape[d] != p.x.shape[d]) return Status::shape_mismatch;

    for (const TensorDesc* t : {&p.x, &p.residual, &p.y, &p.residual_out, &p.weight, &p.bias, &p.rstd})
        if (present(*t) && t->rank > 0 && t->stride[t->rank - 1] != 1) return Status::inner_stride_not_one;
    for (const TensorDesc* t : {&p.x, &p.residual, &p.y, &p.residual_out, &p.rstd})
        if (present(*t) && t->rank > 1 && !rows_apart(*t)) return Status::overlapping_rows;

    const DataType act = p.x.dtype;
    if (!known_dtype(act)) return Status::unsupported_dtype;
    for (const TensorDesc* t : acts)
        if (present(*t) && t->dtype != act) return Status::unsupported_dtype;
    for (const TensorDesc* t : vecs)
        if (present(*t) && t->dtype != act && t->dtype != DataType::f32) return Status::unsupported_dtype;
    if (present(p.rstd) && p.rstd.dtype != DataType::f32) return Status::unsupported_dtype;

    if (cols < 1 || cols > kMaxCols) return Status::cols_out_of_range;

    // Outputs: exactly their allowed input, or apart from every other tensor.
    const TensorDesc* all[] = {&p.x, &p.residual, &p.weight, &p.bias, &p.y, &p.residual_out, &p.rstd};
    const TensorDesc* outs[] = {&p.y, &p.residual_out, &p.rstd};
    const TensorDesc* allowed[] = {&p.x, &p.residual, nullptr};
    for (int o = 0; o < 3; ++o) {
        const TensorDesc& out = *outs[o];
        if (!present(out)) continue;
        for (const TensorDesc* other : all) {
            if (other == &out || !present(*other)) continue;
            if (other == allowed[o] && same_tensor(out, *other)) continue;
            if (span_of(out).meets(span_of(*other))) return Status::partial_overlap;
        }
    }

    if (!(p.eps >= 0.0f) || !std::isfinite(p.eps)) return Status::bad_eps;
    if (p.mode != NormMode::rms && p.mode != NormMode::layer) return Status::bad_mode;
    return Status::success;
}
/// [validate]

/// True when `p` may be accessed `bytes` at a time.
bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// The current device's peak DRAM bandwidth in GB/s: its memory clock (kHz, two transfers a
/// clock) times its bus width. 0 where the device does not say; the error is cleared, so the
/// call's launch reports its own.
double peak_dram_gbps() {
    int device = 0, khz = 0, bits = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
        cudaGetLastError();
        return 0.0;
    }
    return 2.0 * khz * 1e3 * (bits / 8) / 1e9;
}

}  // namespace

/// The validated call: the kernel's arguments and the launcher chosen for them.
struct NormDescriptor {
    Params params;
    Launcher launcher;
};

/**
 * @brief Validates a norm problem and fixes its launch plan.
 *
 * Checks the contract of production_norm.h in the order of Status's values and returns the
 * first rule broken; on success `*out` owns a descriptor holding the kernel's arguments, the
 * vector width and the launcher. No device work is done (it may ask the device its memory's
 * speed), so it may be called during a capture.
 *
 * @param[in]  problem  the tensors, mode and eps of the call
 * @param[out] out      the descriptor on success, nullptr otherwise
 * @return Status::success, or the Status naming what is wrong
 *
 * Performance: the vector width is the widest of 16 bytes and one element that divides cols,
 * every outer stride and the offset of every activation pointer, with the weight and bias
 * aligned to their own type's share; rows of up to 8 (4 with a residual) 16-byte vectors per
 * thread stay in registers, but 16-bit RMSNorm rows with parameters in T, of 6144 (7168 with
 * a bias) to 16384 columns (2049 to 16384 beside a residual without a bias, from 128 MiB of
 * input) are read twice through the L2, 2 vectors a thread. On DRAM of 4000 GB/s or more (an
 * H200) more than 256 such rows take the plan measured there instead (fast_memory_launcher: no
 * second read through the L2, 4 vectors a thread). Past 4096 16-byte vectors a row
 * with a bias, a residual or LayerNorm (any row past 8192) lives in the shared memory of a
 * cluster of 2 to 8 blocks; longer rows of narrower vectors are streamed twice. Bytes per call:
 * rows · cols · sizeof(T) · (2 + 2·residual_out + residual_in_only) + cols · (sizeof(weight) +
 * sizeof(bias)) + 4 · rows (rstd).
 */
Status norm_create(const NormProblem& problem, NormDescriptor** out) {
    if (!out) return Status::missing_tensor;
    *out = nullptr;
    const Status st = validate(problem);
    if (st != Status::success) return st;

    const NormProblem& p = problem;
    const int rank = p.x.rank;
    const bool res = present(p.residual);
    Params a{};
    a.x = p.x.data;
    a.residual = res ? p.residual.data : nullptr;
    a.weight = p.weight.data;
    a.bias = present(p.bias) ? p.bias.data : nullptr;
    a.y = p.y.data;
    a.residual_out = present(p.residual_out) ? p.residual_out.data : nullptr;
    a.rstd = present(p.rstd) ? static_cast<float*>(p.rstd.data) : nullptr;
    a.cols = static_cast<int>(p.x.shape[rank - 1]);
    a.heads = rank == 3 ? p.x.shape[1] : 1;
    a.rows = rank == 3 ? p.x.shape[0] * p.x.shape[1] : p.x.shape[0];
    if (a.heads == 0) a.heads = 1;  // no rows at all
    auto strides = [&](const TensorDesc& t, int64_t& s0, int64_t& s1) {
        if (!present(t)) return;
        s0 = t.stride[0];
        s1 = rank == 3 ? t.stride[1] : 0;
    };
    strides(p.x, a.x_s0, a.x_s1);
    strides(p.residual, a.r_s0, a.r_s1);
    strides(p.y, a.y_s0, a.y_s1);
    strides(p.residual_out, a.ro_s0, a.ro_s1);
    a.rstd_s0 = present(p.rstd) && rank == 3 ? p.rstd.stride[0] : 1;
    a.eps = p.eps;
    a.layer = p.mode == NormMode::layer;
    a.weight_f32 = p.weight.dtype == DataType::f32 && p.x.dtype != DataType::f32;
    a.bias_f32 = present(p.bias) && p.bias.dtype == DataType::f32 && p.x.dtype != DataType::f32;

    /// [vector-width]
    // One width for every activation tensor: it divides cols and every outer stride, and
    // every pointer is aligned to it. The parameters follow their own type: an fp32 weight
    // beside bf16 activations is read 16 bytes (4 floats) at a time.
    const size_t t_bytes = dtype_bytes(p.x.dtype);
    auto fits = [&](int w) {
        if (a.cols % w) return false;
        for (const TensorDesc* t : {&p.x, &p.residual, &p.y, &p.residual_out}) {
            if (!present(*t)) continue;
            if (!aligned_to(t->data, w * t_bytes)) return false;
            for (int d = 0; d < rank - 1; ++d)
                if (t->stride[d] % w) return false;
        }
        for (const TensorDesc* t : {&p.weight, &p.bias}) {
            if (!present(*t)) continue;
            if (!aligned_to(t->data, std::min<size_t>(16, w * dtype_bytes(t->dtype)))) return false;
        }
        return true;
    };
    const int full = static_cast<int>(16 / t_bytes);
    const int vec = fits(full) ? full : 1;
    /// [vector-width]

    const int nvec = a.cols / vec;
    const bool heavy = a.layer || a.bias;  // see pick_launcher
    const bool f32_params = a.weight_f32 || a.bias_f32;
    /// [memory-speed]
    // More than kFewRows 16-bit RMSNorm rows in 16-byte vectors: the memory's speed picks the
    // plan (fast_memory_launcher). Only those calls ask the device.
    const bool fast_memory =
        t_bytes == 2 && vec == full && !a.layer && a.rows > kFewRows && peak_dram_gbps() >= kFastMemoryGBps;
    /// [memory-speed]
    Launcher launcher = nullptr;
    switch (p.x.dtype) {
        case DataType::f16:
            launcher = pick_for_type<__half>(vec, res, nvec, a.rows, heavy, a.layer, f32_params, a.heads == 1, fast_memory);
            break;
        case DataType::bf16:
            launcher = pick_for_type<__nv_bfloat16>(vec, res, nvec, a.rows, heavy, a.layer, f32_params, a.heads == 1,
                                                    fast_memory);
            break;
        default:
            launcher = pick_for_type<float>(vec, res, nvec, a.rows, heavy, a.layer, f32_params, a.heads == 1, false);
            break;
    }
    *out = new NormDescriptor{a, launcher};
    return Status::success;
}

/**
 * @brief Launches a validated norm on `stream`.
 * @param[in] desc    from norm_create
 * @param[in] stream  the only stream used
 * @return the launch's error code (not synchronised); cudaSuccess without a launch for 0 rows;
 *         cudaErrorInvalidValue for a null descriptor
 */
cudaError_t norm_launch(const NormDescriptor* desc, cudaStream_t stream) {
    if (!desc) return cudaErrorInvalidValue;
    if (desc->params.rows == 0) return cudaSuccess;
    return desc->launcher(desc->params, stream);
}

/// @brief Frees a descriptor from norm_create; nullptr is accepted.
void norm_destroy(NormDescriptor* desc) { delete desc; }

}  // namespace workbook::lesson9
