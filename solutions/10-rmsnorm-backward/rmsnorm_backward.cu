/**
 * @file rmsnorm_backward.cu
 * @brief Lesson 10 reference: RMSNorm's backward pass, dx and dweight in one pass over memory.
 *
 * What it shows:
 *  - two reductions of opposite direction in one kernel: along each row, `m = Σ g·x̂ / cols`
 *    (like the forward's sum of squares), and down each column, `dweight = Σ_rows dy·x̂`;
 *  - the column reduction without atomics: every row group (a warp, a block, or a cluster of
 *    blocks) walks a fixed set of rows and keeps its columns' sums in registers for the whole
 *    launch, writes them once as a partial row of the workspace, and a second small kernel
 *    adds the partials column by column in a fixed order. Deterministic to the bit, and the
 *    partials are a few MB that stay in L2, against hundreds of MB of dy, x and dx;
 *  - why a long row needs a cluster here even though it did not in the forward: the row's
 *    column sums have to live somewhere for the whole launch, and 65536 fp32 sums are a whole
 *    SM's register file, so the row's columns are split over the blocks of a cluster, and the
 *    row sum `m` is exchanged through distributed shared memory (lesson 8) as messages, not
 *    with a cluster barrier per row: each block writes its part, tagged with the row, into a
 *    slot of every peer's shared memory, and waits only until its own slots hold this row;
 *  - the plan: one warp per row up to 128 vectors, one block per row up to 1024, a cluster
 *    of 2 to 8 blocks beyond; the grid sized to what the device keeps resident (two blocks
 *    per SM, so one loads while the other waits at a barrier), so each row group walks many
 *    rows and the partials stay few;
 *  - rows peeled to their 16-byte boundaries where dy, x and dx are misaligned alike (odd row
 *    lengths): the row groups made a multiple of the period of the rows' offsets, so a group's
 *    columns stay in the same registers in every row it visits;
 *  - few rows (decode batches) in one launch: blocks after the row blocks add dweight
 *    straight from dy, x and rstd, with no partials and no second kernel;
 *  - the column kernel launched as a programmatic dependent launch (lesson 7): its blocks
 *    start as the row blocks leave, and wait in the kernel for the partials;
 *  - on fast memory (an H200), a cluster's blocks ask for their slice of the next row with one
 *    bulk L2 prefetch each, so memory keeps working while the cluster exchanges a row's sum.
 *
 * What it leaves out: TMA loads.
 * Clusters need sm_90: on older devices the entry point returns cudaErrorNotSupported.
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "workbook/rmsnorm_backward.h"

namespace workbook::lesson10 {
namespace {

constexpr int kWarpSize = 32;
/// Warps of a warp-per-row block: each warp owns its own rows.
constexpr int kWarpRowsBlock = 256;
/// Largest grid.x a launch accepts.
constexpr int64_t kMaxGridX = 2147483647;
/// Largest portable cluster.
constexpr int kMaxCluster = 8;
/// Rows at which the grid cannot fill the device with many rows per group: each row is
/// spread over as many threads as it has vectors, one vector each, for the shortest latency.
constexpr int64_t kFewRows = 256;
/// Column blocks (32 columns each) from which the column kernel uses 8 slices of the partials
/// (256-thread blocks) instead of 32 (1024 threads), per SM: with that many blocks the device
/// is full anyway, and small blocks fit in one wave.
constexpr int kManyColumnBlocksPerSm = 4;
/// Loads each lane of the column kernel has in flight before it adds them.
constexpr int kColumnLoads = 8;
/// The tag of an empty mailbox slot (tags are row numbers; no launch has 2^32 - 1 rows of
/// the 1025 or more columns that take a cluster).
constexpr unsigned long long kNoRow = ~0ull;

/// Warp-per-row blocks each SM keeps resident, by vectors per lane: the launch bounds hold the
/// registers to what that many blocks need (42, 64 and 128 a thread), so the grid can be sized
/// from it without asking the driver.
constexpr int warp_rows_blocks_per_sm(int vecs) { return vecs == 1 ? 6 : vecs == 2 ? 4 : 2; }

/// fp32 view of an element: all arithmetic is fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
/// bf16 is the top half of an fp32: a shift. Written out, it lets the compiler keep the
/// packed values packed; the intrinsic's form makes it hold fp32 copies instead.
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
    return __uint_as_float(static_cast<unsigned>(__bfloat16_as_ushort(v)) << 16);
}

/// Round-to-nearest back to the storage type.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements moved by one access of up to 16 bytes.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// fp32 copies of a pack's elements. A 32-bit word of two bf16 gives the low one shifted up and
/// the high one with its low half cleared, one instruction each (element by element, the
/// compiler spends two on the high one); every element is widened six times per row.
template <typename T, int VEC>
__device__ __forceinline__ void unpack(const Pack<T, VEC>& p, float (&f)[VEC]) {
    if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
        const unsigned* words = reinterpret_cast<const unsigned*>(&p);
#pragma unroll
        for (int j = 0; j < VEC / 2; ++j) {
            f[2 * j] = __uint_as_float(words[j] << 16);
            f[2 * j + 1] = __uint_as_float(words[j] & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
    }
}

/// Tells the compiler the packed registers may have changed, so fp32 copies made before this
/// point cannot be reused after it: it converts again instead of keeping both. Between the row
/// sum and the outputs that halves the registers of 16-bit rows. Emits no code.
template <typename T, int VEC, int V>
__device__ __forceinline__ void keep_packed(Pack<T, VEC> (&p)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
        if constexpr (sizeof(Pack<T, VEC>) % 4 == 0) {
            unsigned* words = reinterpret_cast<unsigned*>(&p[i]);
#pragma unroll
            for (int j = 0; j < static_cast<int>(sizeof(Pack<T, VEC>) / 4); ++j) asm volatile("" : "+r"(words[j]));
        } else {
            asm volatile("" : "+h"(*reinterpret_cast<unsigned short*>(&p[i])));
        }
    }
}

/// Sum over the warp. An xor butterfly adds the same two operands in every lane at every
/// step, so all 32 lanes end with bit-identical sums.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// The pointers and sizes every kernel needs. No output overlaps an input (the contract).
template <typename T>
struct Args {
    const T* __restrict__ dy;
    const T* __restrict__ x;
    const T* __restrict__ weight;
    const float* __restrict__ rstd;
    T* __restrict__ dx;
    float* __restrict__ partials;  ///< the workspace: one row of cols sums per row group (null: none)
    float* __restrict__ dweight;   ///< written by the column blocks of a few-rows launch
    int64_t dy_stride, x_stride, dx_stride;
    int64_t rows;
    int cols;
    int64_t row_blocks;  ///< blocks [0, row_blocks) do rows; any after them add dweight's columns
    bool prefetch;       ///< fast memory: a cluster's blocks bring their slice of the next row into L2
};

/// [peel]
/// Elements before the first 16-byte boundary of a row that starts at `row`: 0 when the row is
/// aligned, else up to VEC - 1 (never more than cols).
template <typename T, int VEC>
__device__ __forceinline__ int peel_count(const T* row, int cols) {
    constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
    const int past = static_cast<int>(reinterpret_cast<uintptr_t>(row) % kBytes) / static_cast<int>(sizeof(T));
    const int head = past == 0 ? 0 : VEC - past;
    return head < cols ? head : cols;
}

/// The weight's VEC elements [head + VEC·idx, head + VEC·idx + VEC) for a peeled row: one
/// aligned load when they line up with the row's vectors, else the two aligned 16-byte loads
/// that cover them, shifted into place (the second read element by element when its 16 bytes
/// run past the weight's end). Once per row group: a group's rows all start at the same offset.
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_skewed(const T* weight, int cols, int head, int idx) {
    using P = Pack<T, VEC>;
    static_assert(sizeof(P) == 16, "a peeled row moves whole 16-byte vectors");
    const T* first = weight + head;
    const int skew = static_cast<int>(reinterpret_cast<uintptr_t>(first) % sizeof(P)) / static_cast<int>(sizeof(T));
    const T* base = first - skew;  // 16-byte aligned
    const P* chunks = reinterpret_cast<const P*>(base);
    if (skew == 0) return chunks[idx];
    P lo = chunks[idx], hi;
    if ((idx + 2) * VEC <= skew + cols - head) {
        hi = chunks[idx + 1];
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) hi.v[k] = k < skew ? base[(idx + 1) * VEC + k] : lo.v[k];
    }
    const uint4 a = *reinterpret_cast<const uint4*>(&lo);
    const uint4 b = *reinterpret_cast<const uint4*>(&hi);
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    // A shift by `bytes` over the 32 bytes in three steps of constant indices: two words, one
    // word, then half a word.
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

/**
 * A peeled row's edges as one thread holds them: the row's `head` elements before its first
 * 16-byte boundary and `tail` after its last whole vector, one element of each at most, to
 * the threads whose `slot` is below head (column slot) or tail (column tail_start + slot). Its
 * column sums, like the vectors', stay in registers for the whole launch.
 */
template <typename T>
struct Edges {
    int col[2] = {-1, -1};  ///< the columns this thread holds (-1: none)
    float w[2] = {0.0f, 0.0f};
    float acc[2] = {0.0f, 0.0f};

    __device__ __forceinline__ void init(const T* weight, int slot, int head, int tail_start, int tail) {
        col[0] = slot < head ? slot : -1;
        col[1] = slot < tail ? tail_start + slot : -1;
#pragma unroll
        for (int e = 0; e < 2; ++e)
            if (col[e] >= 0) w[e] = to_float(weight[col[e]]);
    }
    /// This row's dy and x at the thread's columns (0 where it holds none).
    __device__ __forceinline__ void load(const T* dyr, const T* xr, float (&dy)[2], float (&x)[2]) const {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            dy[e] = col[e] >= 0 ? to_float(dyr[col[e]]) : 0.0f;
            x[e] = col[e] >= 0 ? to_float(xr[col[e]]) : 0.0f;
        }
    }
    __device__ __forceinline__ float dot(const float (&dy)[2], const float (&x)[2], float rstd) const {
        return fmaf(dy[0] * w[0], x[0] * rstd, dy[1] * w[1] * (x[1] * rstd));
    }
    __device__ __forceinline__ void outputs(const float (&dy)[2], const float (&x)[2], float rstd, float m, T* dxr) {
#pragma unroll
        for (int e = 0; e < 2; ++e)
            if (col[e] >= 0) {
                const float xh = x[e] * rstd;
                dxr[col[e]] = from_float<T>(rstd * fmaf(-xh, m, dy[e] * w[e]));
                acc[e] = fmaf(dy[e], xh, acc[e]);
            }
    }
};
/// [peel]

/// [pdl]
/// The row kernels let the column kernel, launched after them as a programmatic dependent
/// launch, be scheduled now: its blocks take the SMs the row blocks leave and wait inside the
/// kernel (cudaGridDependencySynchronize) until every partial is written, instead of starting
/// only after the launch gap that follows the last row block.
__device__ __forceinline__ void allow_column_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}
/// [pdl]

/// [row-pass]
/// One row's share of this thread: V vectors of dy and x, already loaded. Returns this
/// thread's part of Σ g·x̂ with g = dy·w, x̂ = x·rstd.
template <typename T, int VEC, int V>
__device__ __forceinline__ float row_dot(const Pack<T, VEC> (&dy)[V], const Pack<T, VEC> (&x)[V],
                                         const Pack<T, VEC> (&w)[V], const bool (&valid)[V], float rstd) {
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < V; ++i)
        if (valid[i]) {
            float fd[VEC], fx[VEC], fw[VEC];
            unpack(dy[i], fd);
            unpack(x[i], fx);
            unpack(w[i], fw);
#pragma unroll
            for (int k = 0; k < VEC; ++k) dot = fmaf(fd[k] * fw[k], fx[k] * rstd, dot);
        }
    return dot;
}

/// dx = rstd · (g − x̂ · m) for this thread's vectors, stored; and the column sums
/// acc += dy · x̂ (the dweight terms of this row), kept in registers across rows.
template <typename T, int VEC, int V>
__device__ __forceinline__ void row_outputs(const Pack<T, VEC> (&dy)[V], const Pack<T, VEC> (&x)[V],
                                            const Pack<T, VEC> (&w)[V], const bool (&valid)[V], const int (&idx)[V],
                                            float rstd, float m, Pack<T, VEC>* dxr, float (&acc)[V][VEC]) {
#pragma unroll
    for (int i = 0; i < V; ++i)
        if (valid[i]) {
            Pack<T, VEC> out;
            float fd[VEC], fx[VEC], fw[VEC];
            unpack(dy[i], fd);
            unpack(x[i], fx);
            unpack(w[i], fw);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float xh = fx[k] * rstd;
                out.v[k] = from_float<T>(rstd * fmaf(-xh, m, fd[k] * fw[k]));
                acc[i][k] = fmaf(fd[k], xh, acc[i][k]);
            }
            dxr[idx[i]] = out;
        }
}
/// [row-pass]

/**
 * Rows of at most 32·V vectors: one warp per row, kWarpRowsBlock / 32 rows per block at a
 * time, each warp walking rows warp_id, warp_id + warps, ... of the whole grid. Lane l owns
 * vectors l, l + 32, ... of every row it visits, so its column sums stay in its registers.
 * At the end the block's warps add their sums in warp order in shared memory and the block
 * writes one partial row.
 */
template <typename T, int VEC, int V, bool PEEL>
__global__ void __launch_bounds__(kWarpRowsBlock, warp_rows_blocks_per_sm(V))
    backward_warp_rows_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    constexpr int kWarps = kWarpRowsBlock / kWarpSize;
    extern __shared__ float column_sums[];  // cols floats

    allow_column_kernel();
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    const int64_t first_row = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
    // PEEL: the warp's rows all start at the offset of its first (the plan made the number of
    // groups a multiple of the rows' period), so its columns are the same in every row.
    const int head = PEEL ? peel_count<T, VEC>(a.x + first_row * a.x_stride, a.cols) : 0;
    const int nvec = (a.cols - head) / VEC;
    Edges<T> edges;
    if constexpr (PEEL) edges.init(a.weight, lane, head, head + nvec * VEC, a.cols - head - nvec * VEC);

    int idx[V];
    bool valid[V];
    P w[V];
    float acc[V][VEC];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        idx[i] = lane + i * kWarpSize;
        valid[i] = idx[i] < nvec;
        if (valid[i]) {
            if constexpr (PEEL) {
                w[i] = load_skewed<T, VEC>(a.weight, a.cols, head, idx[i]);
            } else {
                w[i] = reinterpret_cast<const P*>(a.weight)[idx[i]];
            }
        }
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc[i][k] = 0.0f;
    }

    const int64_t groups = static_cast<int64_t>(gridDim.x) * kWarps;
    for (int64_t row = first_row; row < a.rows; row += groups) {
        // 64-bit offsets: rows × stride passes 2^31 elements on large tensors.
        const P* dyr = reinterpret_cast<const P*>(a.dy + row * a.dy_stride + head);
        const P* xr = reinterpret_cast<const P*>(a.x + row * a.x_stride + head);
        P dyv[V], xv[V];
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (valid[i]) {
                dyv[i] = dyr[idx[i]];
                xv[i] = xr[idx[i]];
            }
        float edy[2], ex[2];
        if constexpr (PEEL) edges.load(a.dy + row * a.dy_stride, a.x + row * a.x_stride, edy, ex);
        const float rstd = a.rstd[row];
        keep_packed(w);
        float dot = row_dot(dyv, xv, w, valid, rstd);
        if constexpr (PEEL) dot += edges.dot(edy, ex, rstd);
        keep_packed(dyv);
        keep_packed(xv);
        keep_packed(w);
        const float m = warp_sum(dot) * inv_cols;
        T* dxr = a.dx + row * a.dx_stride;
        row_outputs(dyv, xv, w, valid, idx, rstd, m, reinterpret_cast<P*>(dxr + head), acc);
        if constexpr (PEEL) edges.outputs(edy, ex, rstd, m, dxr);
    }

    /// [block-partial]
    // The block's partial: warp 0 writes its sums, each later warp adds its own, one warp at
    // a time. The order is fixed, so the partial is the same bits on every run.
    for (int turn = 0; turn < kWarps; ++turn) {
        if (warp == turn) {
#pragma unroll
            for (int i = 0; i < V; ++i)
                if (valid[i]) {
#pragma unroll
                    for (int k = 0; k < VEC; ++k) {
                        float& slot = column_sums[head + idx[i] * VEC + k];
                        slot = turn == 0 ? acc[i][k] : slot + acc[i][k];
                    }
                }
            if constexpr (PEEL) {
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (edges.col[e] >= 0) {
                        float& slot = column_sums[edges.col[e]];
                        slot = turn == 0 ? edges.acc[e] : slot + edges.acc[e];
                    }
            }
        }
        __syncthreads();
    }
    float* out = a.partials + static_cast<int64_t>(blockIdx.x) * a.cols;
    for (int c = threadIdx.x; c < a.cols; c += kWarpRowsBlock) out[c] = column_sums[c];
    /// [block-partial]
}

/// [prefetch]
/// Asks for `bytes` (a multiple of 16) from the 16-byte aligned `p` to be brought into L2: one bulk
/// request (sm_90), no registers, nothing to wait for.
__device__ __forceinline__ void prefetch_l2(const void* p, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}
/// [prefetch]

/// [direct-columns]
/// Few rows: dweight straight from dy, x and rstd, no partials. Lane l owns column
/// 32·col_block + l, warp w adds rows w, w + warps, ... in order, then warp 0 adds the warp
/// sums in warp order: the same bits every run. The rows were just read by the row blocks of
/// the same launch, so they mostly come from L2.
template <typename T>
__device__ void direct_column_sums(const Args<T>& a, int64_t col_block) {
    __shared__ float slice_sums[kWarpSize][kWarpSize + 1];
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int warps = static_cast<int>(blockDim.x) / kWarpSize;
    const int64_t col = col_block * kWarpSize + lane;
    float sum = 0.0f;
    if (col < a.cols) {
        for (int64_t r = warp; r < a.rows; r += warps) {
            const float xh = to_float(a.x[r * a.x_stride + col]) * a.rstd[r];
            sum = fmaf(to_float(a.dy[r * a.dy_stride + col]), xh, sum);
        }
    }
    slice_sums[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && col < a.cols) {
        float total = slice_sums[0][lane];
        for (int w = 1; w < warps; ++w) total += slice_sums[w][lane];
        a.dweight[col] = total;
    }
}
/// [direct-columns]

/**
 * Longer rows: a block, or a cluster of CLUSTER blocks, per row. Block `rank` of a cluster
 * owns vectors [rank·blockDim·V, (rank+1)·blockDim·V) of every row, thread t the vectors
 * rank·blockDim·V + t + i·blockDim. The row sum goes warp → shared memory → block, and with
 * a cluster from every block's shared memory to every block (distributed shared memory).
 * Each cluster walks rows cluster_id, cluster_id + clusters, ..., so its blocks always run
 * the same iterations and exchange their parts of the same rows.
 */
template <typename T, int VEC, int V, bool CLUSTER, int MAX_BLOCK, int MIN_BLOCKS, bool PEEL>
__global__ void __launch_bounds__(MAX_BLOCK, MIN_BLOCKS)
    backward_block_rows_kernel(Args<T> a) {
    using P = Pack<T, VEC>;
    allow_column_kernel();
    // A few-rows launch: the blocks after the rows' add dweight's columns (whole clusters of them).
    if (blockIdx.x >= a.row_blocks) {
        direct_column_sums(a, blockIdx.x - a.row_blocks);
        return;
    }
    __shared__ float warp_sums[2][MAX_BLOCK / kWarpSize];
    // Clusters: slot [bank][r] holds block r's part of a row's sum, tagged with the row.
    __shared__ unsigned long long mailbox[2][kMaxCluster];

    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int warps = static_cast<int>(blockDim.x) / kWarpSize;
    const float inv_cols = 1.0f / static_cast<float>(a.cols);
    int rank = 0, blocks = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    if constexpr (CLUSTER) {
        // The rank inside the cluster, not blockIdx.x, says which slice is this block's:
        // ranks are what map_shared_rank speaks.
        rank = static_cast<int>(cg::this_cluster().block_rank());
        blocks = static_cast<int>(cg::this_cluster().num_blocks());
    }
#endif

    const int64_t group = blockIdx.x / blocks;
    const int64_t groups = a.row_blocks / blocks;
    // PEEL: the group's rows all start at the offset of its first (the plan made the number of
    // groups a multiple of the rows' period); block rank 0 holds the edges.
    const int head = PEEL ? peel_count<T, VEC>(a.x + group * a.x_stride, a.cols) : 0;
    const int nvec = (a.cols - head) / VEC;
    Edges<T> edges;
    if constexpr (PEEL)
        edges.init(a.weight, rank == 0 ? static_cast<int>(threadIdx.x) : VEC, head, head + nvec * VEC,
                   a.cols - head - nvec * VEC);

    int idx[V];
    bool valid[V];
    P w[V];
    float acc[V][VEC];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        idx[i] = rank * static_cast<int>(blockDim.x) * V + static_cast<int>(threadIdx.x) + i * static_cast<int>(blockDim.x);
        valid[i] = idx[i] < nvec;
        if (valid[i]) {
            if constexpr (PEEL) {
                w[i] = load_skewed<T, VEC>(a.weight, a.cols, head, idx[i]);
            } else {
                w[i] = reinterpret_cast<const P*>(a.weight)[idx[i]];
            }
        }
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc[i][k] = 0.0f;
    }

    int bank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (CLUSTER) {
        // Empty slots carry a tag no row has, and every block's are empty before any peer
        // writes into them.
        if (threadIdx.x < 2 * kMaxCluster) mailbox[threadIdx.x / kMaxCluster][threadIdx.x % kMaxCluster] = kNoRow;
        cg::this_cluster().sync();
    }
#endif
    for (int64_t row = group; row < a.rows; row += groups) {
        const P* dyr = reinterpret_cast<const P*>(a.dy + row * a.dy_stride + head);
        const P* xr = reinterpret_cast<const P*>(a.x + row * a.x_stride + head);
        P dyv[V], xv[V];
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (valid[i]) {
                dyv[i] = dyr[idx[i]];
                xv[i] = xr[idx[i]];
            }
        float edy[2], ex[2];
        if constexpr (PEEL) edges.load(a.dy + row * a.dy_stride, a.x + row * a.x_stride, edy, ex);
        const float rstd = a.rstd[row];
        /// [prefetch-next-row]
        // A row over a cluster waits for its peers' sums, and memory idles meanwhile unless the
        // group's next row is already on its way: one thread a block asks for its slice of it.
        // Not in the peeled kernels: in fp16 the request's registers spilled the shifted weight.
        if constexpr (CLUSTER && VEC * sizeof(T) == 16 && !PEEL) {
            const int64_t next = row + groups;
            if (a.prefetch && threadIdx.x == 0 && next < a.rows) {
                const int slice = static_cast<int>(blockDim.x) * V;  // vectors of this block
                const int first = rank * slice;
                const int count = nvec - first < slice ? nvec - first : slice;
                if (count > 0) {
                    prefetch_l2(a.dy + next * a.dy_stride + head + first * VEC, count * 16);
                    prefetch_l2(a.x + next * a.x_stride + head + first * VEC, count * 16);
                }
            }
        }
        /// [prefetch-next-row]

        /// [row-sum]
        // Warps → shared memory → every warp adds the warp sums in the same order. Two banks
        // alternate between rows, so one barrier per row is enough.
        keep_packed(w);
        float dot = row_dot(dyv, xv, w, valid, rstd);
        if constexpr (PEEL) dot += edges.dot(edy, ex, rstd);
        keep_packed(dyv);
        keep_packed(xv);
        keep_packed(w);
        dot = warp_sum(dot);
        if (lane == 0) warp_sums[bank][warp] = dot;
        __syncthreads();
        dot = warp_sum(lane < warps ? warp_sums[bank][lane] : 0.0f);
        bank ^= 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if constexpr (CLUSTER) {
            // This row's bank is bank ^ 1 (bank already names the next row's). Thread r sends
            // this block's sum to block r: one 8-byte store of (row, sum) into slot [rank] of
            // r's shared memory. Then lane r of every warp waits until its own slot [r] holds
            // this row, and the warp adds the slots in rank
            // order: the same values in the same lanes everywhere, so every thread of every
            // block gets the same total, to the bit. No cluster barrier: a block waits only
            // for its peers' sums of this row. Two banks suffice: a block writes a slot again
            // two rows later, after its peer has sent the next row's sum, which the peer does
            // only once every one of its warps is past reading this one.
            const unsigned tag = static_cast<unsigned>(row);
            if (threadIdx.x < blocks) {
                volatile unsigned long long* slot =
                    cg::this_cluster().map_shared_rank(&mailbox[bank ^ 1][rank], static_cast<int>(threadIdx.x));
                *slot = static_cast<unsigned long long>(tag) << 32 | __float_as_uint(dot);
            }
            float part = 0.0f;
            if (lane < blocks) {
                const volatile unsigned long long* mine = &mailbox[bank ^ 1][lane];
                unsigned long long message = *mine;
                while (static_cast<unsigned>(message >> 32) != tag) message = *mine;
                part = __uint_as_float(static_cast<unsigned>(message));
            }
            dot = warp_sum(part);
        }
#endif
        /// [row-sum]
        const float m = dot * inv_cols;
        T* dxr = a.dx + row * a.dx_stride;
        row_outputs(dyv, xv, w, valid, idx, rstd, m, reinterpret_cast<P*>(dxr + head), acc);
        if constexpr (PEEL) edges.outputs(edy, ex, rstd, m, dxr);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // No block may leave while a peer can still write into its slots.
    if constexpr (CLUSTER) cg::this_cluster().sync();
#endif

    // The group's partial: each thread writes the sums of its own columns. A few-rows launch
    // has none: its column blocks add dweight from the inputs.
    if (a.partials == nullptr) return;
    float* out = a.partials + group * a.cols;
#pragma unroll
    for (int i = 0; i < V; ++i)
        if (valid[i]) {
#pragma unroll
            for (int k = 0; k < VEC; ++k) out[head + idx[i] * VEC + k] = acc[i][k];
        }
    if constexpr (PEEL) {
#pragma unroll
        for (int e = 0; e < 2; ++e)
            if (edges.col[e] >= 0) out[edges.col[e]] = edges.acc[e];
    }
}

/// [column-pass]
/// dweight[c] = Σ_p partials[p][c] over the `groups` partial rows. Lane l of every warp owns
/// column 32·blockIdx.x + l; warp w of the SLICES adds partials w, w + SLICES, ... (eight loads
/// in flight before the adds); then warp 0 adds the warp sums in warp order. Coalesced 128-byte
/// reads, a fixed order, no atomics. Launched as a programmatic dependent launch: it waits here
/// for the row kernel to finish and its partials to be visible.
template <int SLICES>
__global__ void __launch_bounds__(SLICES * kWarpSize)
    column_sum_kernel(const float* __restrict__ partials, int64_t groups, int cols, float* __restrict__ dweight) {
    constexpr int kSlices = SLICES;
    __shared__ float slice_sums[kSlices][kWarpSize + 1];
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int col = blockIdx.x * kWarpSize + lane;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    float sum = 0.0f;
    if (col < cols) {
        int64_t p = warp;
        for (; p + (kColumnLoads - 1) * kSlices < groups; p += kColumnLoads * kSlices) {
            float v[kColumnLoads];
#pragma unroll
            for (int j = 0; j < kColumnLoads; ++j) v[j] = partials[(p + j * kSlices) * cols + col];
#pragma unroll
            for (int j = 0; j < kColumnLoads; ++j) sum += v[j];
        }
        for (; p < groups; p += kSlices) sum += partials[p * cols + col];
    }
    slice_sums[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && col < cols) {
        float total = slice_sums[0][lane];
#pragma unroll
        for (int s = 1; s < kSlices; ++s) total += slice_sums[s][lane];
        dweight[col] = total;
    }
}
/// [column-pass]

/// How a call is laid out on the device.
enum class RowKernel {
    warp1, warp2, warp4,    ///< a warp per row, 1, 2 or 4 vectors a lane
    few, few_cluster,       ///< few rows: one vector a thread, a block (or a cluster) of up to 1024 threads
    wide, wide_cluster,     ///< 4 vectors a thread, blocks of up to 256 threads, two per SM
    wide_big_cluster,       ///< fp32 rows past 8192 vectors: blocks of up to 512 threads, one per SM
    scalar, scalar_cluster, ///< unvectorised rows: 8 elements a thread, up to 1024 threads
};

struct Plan {
    RowKernel kernel = RowKernel::warp1;
    int block = 0;             ///< threads per block
    int cluster = 1;           ///< blocks per row
    int64_t groups = 0;        ///< row groups
    int64_t row_blocks = 0;    ///< blocks working on rows (groups × cluster)
    int64_t grid = 0;          ///< all blocks: the row blocks, then a few-rows launch's column blocks
    int64_t partial_rows = 0;  ///< rows of cols floats in the workspace (0: dweight is added directly)
    size_t smem = 0;           ///< dynamic shared memory per block
    bool peel = false;         ///< rows peeled to 16-byte boundaries (vectors of 16 bytes)
};

/// A block-per-row kernel's shape: V vectors a thread, rows split over a cluster or not, and
/// its launch bounds (at most MAX_BLOCK threads, MIN_BLOCKS such blocks per SM).
template <int V_, bool CLUSTER_, int MAX_BLOCK_, int MIN_BLOCKS_>
struct BlockShape {
    static constexpr int V = V_;
    static constexpr bool CLUSTER = CLUSTER_;
    static constexpr int MAX_BLOCK = MAX_BLOCK_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
};

/// The kernel of a BlockShape (PEEL: rows peeled to 16-byte boundaries).
template <typename T, int VEC, typename S, bool PEEL>
constexpr auto block_kernel() {
    return backward_block_rows_kernel<T, VEC, S::V, S::CLUSTER, S::MAX_BLOCK, S::MIN_BLOCKS, PEEL>;
}

/// Calls f with the BlockShape of a block-per-row RowKernel (for VEC = 1, the scalar ones).
template <int VEC, typename F>
cudaError_t with_shape(RowKernel k, F&& f) {
    if constexpr (VEC == 1) {
        if (k == RowKernel::scalar_cluster) return f(BlockShape<8, true, 1024, 1>{});
        return f(BlockShape<8, false, 1024, 1>{});
    } else {
        switch (k) {
            case RowKernel::few: return f(BlockShape<1, false, 1024, 1>{});
            case RowKernel::few_cluster: return f(BlockShape<1, true, 1024, 1>{});
            case RowKernel::wide_cluster: return f(BlockShape<4, true, 256, 2>{});
            case RowKernel::wide_big_cluster: return f(BlockShape<4, true, 512, 1>{});
            default: return f(BlockShape<4, false, 256, 2>{});
        }
    }
}

/// Blocks of `block` threads one SM keeps resident, when the launch bounds hold the registers
/// to what MIN_BLOCKS blocks of MAX_BLOCK threads need; the grid is sized from it, so no
/// occupancy query is needed.
template <typename S>
int64_t blocks_per_sm(int block) {
    int n = S::MAX_BLOCK * S::MIN_BLOCKS / block;
    if (n > 2048 / block) n = 2048 / block;
    if (n > 32) n = 32;
    return n > 0 ? n : 1;
}

/// Groups for `rows` rows when `resident` fit at once: as many rows per group as a full grid
/// needs, and no more groups than that takes (fewer partial rows, the same longest group).
inline int64_t balanced_groups(int64_t rows, int64_t resident) {
    const int64_t per_group = (rows + resident - 1) / resident;
    return (rows + per_group - 1) / per_group;
}

/// [period]
/// Row groups for rows whose starts repeat their 16-byte offset every `period` rows (1, 2, 4
/// or 8): a multiple of the period, so each group, walking rows g, g + groups, ..., meets one
/// offset only, and its columns stay in the same registers in every row. Rounded up while
/// that still fits in one wave of `resident` groups, else down.
inline int64_t whole_periods(int64_t groups, int64_t rows, int64_t resident, int period) {
    if (period <= 1 || groups >= rows) return groups;
    const int64_t up = (groups + period - 1) / period * period;
    if (up <= resident) return up;
    const int64_t down = groups / period * period;
    return down > 0 ? down : period;
}
/// [period]

/// Warp-per-row plans: groups = blocks × 8 warps, a multiple of every period.
template <int V>
void plan_warp_rows(Plan& p, RowKernel k, int64_t rows, int cols, int sms) {
    constexpr int kWarps = kWarpRowsBlock / kWarpSize;
    p.kernel = k;
    p.block = kWarpRowsBlock;
    p.cluster = 1;
    p.smem = static_cast<size_t>(cols) * sizeof(float);
    const int64_t warps = balanced_groups(rows, static_cast<int64_t>(sms) * warp_rows_blocks_per_sm(V) * kWarps);
    p.grid = (warps + kWarps - 1) / kWarps;
    p.groups = p.grid;
    p.row_blocks = p.grid;
    p.partial_rows = p.grid;
}

template <typename T, int VEC, bool PEEL>
cudaError_t plan_block_rows(Plan& p, RowKernel k, int64_t rows, int cols, int nvec, int sms, int period) {
    p.kernel = k;
    return with_shape<VEC>(k, [&](auto shape) {
        using S = decltype(shape);
        // The smallest cluster whose blocks hold their slice within MAX_BLOCK threads.
        int cluster = 1;
        while (S::CLUSTER && cluster < kMaxCluster && (nvec + S::V * cluster - 1) / (S::V * cluster) > S::MAX_BLOCK)
            cluster *= 2;
        const int threads = (nvec + S::V * cluster - 1) / (S::V * cluster);
        p.block = (threads + kWarpSize - 1) / kWarpSize * kWarpSize;
        p.cluster = cluster;
        p.smem = 0;
        int64_t resident = static_cast<int64_t>(sms) * blocks_per_sm<S>(p.block);
        if (S::CLUSTER) {
            // Clusters are placed whole, inside one GPC: the driver knows how many fit.
            cudaLaunchConfig_t config = {};
            cudaLaunchAttribute attribute[1];
            attribute[0].id = cudaLaunchAttributeClusterDimension;
            attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster);
            attribute[0].val.clusterDim.y = 1;
            attribute[0].val.clusterDim.z = 1;
            config.gridDim = dim3(static_cast<unsigned>(cluster));
            config.blockDim = dim3(static_cast<unsigned>(p.block));
            config.attrs = attribute;
            config.numAttrs = 1;
            int clusters = 0;
            const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, block_kernel<T, VEC, S, PEEL>(), &config);
            if (err != cudaSuccess) return err;
            resident = clusters > 0 ? clusters : 1;
        }
        // A few-rows launch also gets whole clusters of column blocks, 32 of dweight's cols each.
        const bool few = k == RowKernel::few || k == RowKernel::few_cluster;
        const int64_t col_groups = (static_cast<int64_t>(cols) + kWarpSize - 1) / kWarpSize;
        const int64_t col_blocks = few ? (col_groups + cluster - 1) / cluster * cluster : 0;
        const int64_t limit = (kMaxGridX - col_blocks) / cluster;
        int64_t groups = balanced_groups(rows, resident);
        if (groups > limit) groups = limit;
        groups = whole_periods(groups, rows, resident, period);
        p.groups = groups;
        p.row_blocks = groups * cluster;
        p.grid = p.row_blocks + col_blocks;
        p.partial_rows = few ? 0 : groups;
        return cudaSuccess;
    });
}

/// [plan]
/// The launch plan for rows of nvec vectors of VEC elements. Short rows: a warp per row,
/// many rows per warp. Longer rows: a block per row, 4 vectors a thread (fp16/bf16: 32
/// elements), up to 256 threads so that two blocks share an SM and one loads while the other
/// waits at a barrier; past 1024 vectors a cluster of 2 to 8 such blocks. Few rows: one vector
/// a thread and up to 1024 threads per block, for the shortest path per row.
template <typename T, int VEC, bool PEEL = false>
cudaError_t make_plan(Plan& p, int64_t rows, int cols, int sms, int period = 1) {
    const int nvec = cols / VEC;  // peeled: the most whole vectors a row holds
    p.peel = PEEL;
    if (nvec <= 4 * kWarpSize) {
        if (nvec <= kWarpSize) plan_warp_rows<1>(p, RowKernel::warp1, rows, cols, sms);
        else if (nvec <= 2 * kWarpSize) plan_warp_rows<2>(p, RowKernel::warp2, rows, cols, sms);
        else plan_warp_rows<4>(p, RowKernel::warp4, rows, cols, sms);
        return cudaSuccess;
    }
    RowKernel k;
    if (VEC == 1) k = nvec <= 8 * 1024 ? RowKernel::scalar : RowKernel::scalar_cluster;
    else if (rows <= kFewRows && nvec <= 1024) k = RowKernel::few;
    else if (rows <= kFewRows && nvec <= kMaxCluster * 1024) k = RowKernel::few_cluster;
    else if (nvec <= 4 * 256) k = RowKernel::wide;
    else if (nvec <= kMaxCluster * 4 * 256) k = RowKernel::wide_cluster;
    else k = RowKernel::wide_big_cluster;
    return plan_block_rows<T, VEC, PEEL>(p, k, rows, cols, nvec, sms, period);
}
/// [plan]

template <typename T, int VEC, bool PEEL>
cudaError_t launch_block_rows(const Plan& p, const Args<T>& a, cudaStream_t stream) {
    return with_shape<VEC>(p.kernel, [&](auto shape) -> cudaError_t {
        using S = decltype(shape);
        auto kernel = block_kernel<T, VEC, S, PEEL>();
        if (!S::CLUSTER) {
            kernel<<<static_cast<unsigned>(p.grid), p.block, 0, stream>>>(a);
            return cudaGetLastError();
        }
        /// [cluster-launch]
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attribute[1];
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = static_cast<unsigned>(p.cluster);
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.gridDim = dim3(static_cast<unsigned>(p.grid));
        config.blockDim = dim3(static_cast<unsigned>(p.block));
        config.stream = stream;
        config.attrs = attribute;
        config.numAttrs = 1;
        return cudaLaunchKernelEx(&config, kernel, a);
        /// [cluster-launch]
    });
}

/// The row kernel the plan chose.
template <typename T, int VEC, bool PEEL = false>
cudaError_t launch_rows(const Plan& p, const Args<T>& a, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>(p.grid);
    switch (p.kernel) {
        case RowKernel::warp1: backward_warp_rows_kernel<T, VEC, 1, PEEL><<<grid, kWarpRowsBlock, p.smem, stream>>>(a); break;
        case RowKernel::warp2: backward_warp_rows_kernel<T, VEC, 2, PEEL><<<grid, kWarpRowsBlock, p.smem, stream>>>(a); break;
        case RowKernel::warp4: backward_warp_rows_kernel<T, VEC, 4, PEEL><<<grid, kWarpRowsBlock, p.smem, stream>>>(a); break;
        default: return launch_block_rows<T, VEC, PEEL>(p, a, stream);
    }
    return cudaGetLastError();
}

/// The vector width: 16 bytes when cols, every row stride (with a second row) and the four
/// vector pointers allow it, else one element.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <typename T>
int vector_width(const T* dy, int64_t dys, const T* x, int64_t xs, const T* w, const T* dx, int64_t dxs, int64_t rows,
                 int64_t cols) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    const bool ok = cols % kVec == 0 && aligned_to(dy, 16) && aligned_to(x, 16) && aligned_to(w, 16) &&
                    aligned_to(dx, 16) && (rows <= 1 || (dys % kVec == 0 && xs % kVec == 0 && dxs % kVec == 0));
    return ok ? kVec : 1;
}

/// [memory-speed]
/// Peak DRAM bandwidth from which the cluster kernels prefetch their next row, in GB/s: between
/// an H100's 3352 and an H200's 4915, the two GPUs the plans were measured on.
constexpr double kFastMemoryGBps = 4000.0;

/// SM count and compute capability of the current device, and whether its DRAM peaks at
/// kFastMemoryGBps or more (its memory clock in kHz, two transfers a clock, times its bus width).
inline cudaError_t device_info(int& sms, int& major, bool& fast) {
    int device = 0, khz = 0, bits = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device);
    fast = 2.0 * khz * 1e3 * (bits / 8) / 1e9 >= kFastMemoryGBps;
    return err;
}
/// [memory-speed]

/// [peel-choice]
/// Rows narrower than 16 bytes can still move 16 bytes at a time when dy, x and dx are
/// misaligned alike in every row (their addresses, and their strides when there is a second
/// row, differ by multiples of 16 bytes): then each row peels the few elements before its first
/// 16-byte boundary and after its last whole vector. Returns the period of the rows' offsets
/// (1, 2, 4 or 8 rows; the row groups are made a multiple of it), or 0 when the rows cannot be
/// peeled or are too short for it.
template <typename T>
int peel_period(const T* dy, int64_t dys, const T* x, int64_t xs, const T* dx, int64_t dxs, int64_t rows,
                int64_t cols) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    const auto apart = [](const void* p, const void* q) {
        return (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(q)) % 16;
    };
    // Up to 64 vectors a row takes the warp kernels of 1 and 2 vectors a lane, whose register
    // budgets have no room for the weight's shift: they would spill.
    if (cols / kVec <= 2 * kWarpSize || !aligned_to(x, sizeof(T)) || apart(dy, x) != 0 || apart(dx, x) != 0) return 0;
    if (rows <= 1) return 1;
    if ((dys - xs) % kVec != 0 || (dxs - xs) % kVec != 0) return 0;
    int period = 1;
    while ((xs * period) % kVec != 0) period *= 2;
    return period;
}
/// [peel-choice]

/// The plan for one of three layouts: 16-byte vectors (vec = 16 / sizeof(T)), rows peeled to
/// 16-byte vectors (period > 0), or one element at a time (vec = 1).
template <typename T>
cudaError_t plan_for(Plan& p, int vec, int period, int64_t rows, int cols, int sms) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    if (period > 0) return make_plan<T, kVec, true>(p, rows, cols, sms, period);
    return vec == kVec ? make_plan<T, kVec>(p, rows, cols, sms) : make_plan<T, 1>(p, rows, cols, sms);
}

}  // namespace

/**
 * @brief Workspace for rmsnorm_backward<T>: one fp32 row of cols partial column sums per row
 *        group, for the largest of the plans the call's pointers and strides may choose
 *        (16-byte vectors, rows peeled to them with any period of offsets, or one element).
 */
template <typename T>
size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols) {
    if (rows <= 0 || cols < 1 || cols > kMaxCols) return 0;
    int sms = 0, major = 0;
    bool fast = false;
    if (device_info(sms, major, fast) != cudaSuccess || major < 9) {
        (void)cudaGetLastError();
        return 0;
    }
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    int64_t groups = 0;
    const auto consider = [&](int vec, int period) {
        Plan p;
        if (plan_for<T>(p, vec, period, rows, static_cast<int>(cols), sms) != cudaSuccess) {
            (void)cudaGetLastError();
            return;
        }
        if (p.partial_rows > groups) groups = p.partial_rows;
    };
    for (int vec : {kVec, 1})
        if (cols % vec == 0) consider(vec, 0);
    if (cols / kVec > 2 * kWarpSize)
        for (int period : {1, 2, 4, 8}) consider(kVec, period);
    return static_cast<size_t>(groups) * static_cast<size_t>(cols) * sizeof(float);
}

/**
 * @brief RMSNorm backward: dx = rstd · (dy·w − x̂ · mean(dy·w·x̂)) per row, written in T, and
 *        dweight = Σ_rows dy · x̂ (fp32, overwritten), with x̂ = x · rstd.
 *
 * @param[in]  dy, dy_row_stride  the gradient of the forward's output; row r at dy + r·stride
 * @param[in]  x, x_row_stride    the forward's input
 * @param[in]  weight             cols scale factors
 * @param[in]  rstd               the forward's 1/sqrt(mean(x²) + eps), fp32, one per row
 * @param[out] dx, dx_row_stride  the gradient of x; padding between rows is never written
 * @param[out] dweight            cols fp32 sums over all rows (rows = 0: zeros)
 * @param      workspace, workspace_bytes  scratch of at least rmsnorm_backward_workspace_bytes<T>(rows, cols)
 *                                bytes, and its size
 * @param[in]  rows, cols         rows ≥ 0, 1 ≤ cols ≤ 65536
 * @param[in]  stream             the only stream anything is enqueued on
 * @return the launch's error code; cudaErrorInvalidValue for bad sizes or a workspace that
 *         is too small; cudaErrorNotSupported below sm_90
 *
 * Performance: dy and x are read once and dx written once; the column sums stay in
 * registers for the whole launch, so the extra traffic is one partial row per row group
 * (a few MB, mostly in L2) and a column kernel over it.
 */
template <typename T>
cudaError_t rmsnorm_backward(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride, const T* weight,
                             const float* rstd, T* dx, int64_t dx_row_stride, float* dweight, void* workspace,
                             size_t workspace_bytes, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > kMaxCols) return cudaErrorInvalidValue;
    // The sum of no rows: dweight is zero, and that is all there is to write.
    if (rows == 0) return cudaMemsetAsync(dweight, 0, static_cast<size_t>(cols) * sizeof(float), stream);

    int sms = 0, major = 0;
    bool fast = false;
    cudaError_t err = device_info(sms, major, fast);
    if (err != cudaSuccess) return err;
    // Thread-block clusters (the long rows) exist from sm_90 on.
    if (major < 9) return cudaErrorNotSupported;

    const int vec = vector_width(dy, dy_row_stride, x, x_row_stride, weight, dx, dx_row_stride, rows, cols);
    const int period = vec == 1 ? peel_period(dy, dy_row_stride, x, x_row_stride, dx, dx_row_stride, rows, cols) : 0;
    const int n = static_cast<int>(cols);
    Plan p;
    err = plan_for<T>(p, vec, period, rows, n, sms);
    if (err != cudaSuccess) return err;
    const size_t needed = static_cast<size_t>(p.partial_rows) * static_cast<size_t>(n) * sizeof(float);
    if (workspace_bytes < needed || (needed > 0 && workspace == nullptr)) return cudaErrorInvalidValue;

    float* partials = p.partial_rows > 0 ? static_cast<float*>(workspace) : nullptr;
    const Args<T> a{dy,           x,          weight,        rstd, dx, partials,     dweight,
                    dy_row_stride, x_row_stride, dx_row_stride, rows, n, p.row_blocks, fast};
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    err = p.peel ? launch_rows<T, kVec, true>(p, a, stream)
          : vec == kVec ? launch_rows<T, kVec>(p, a, stream)
                        : launch_rows<T, 1>(p, a, stream);
    if (err != cudaSuccess || partials == nullptr) return err;
    /// [column-launch]
    // Few column blocks (short rows): 32 slices each, so the partials are read by 1024 threads
    // per 32 columns. Many (long rows): 8 slices, 256 threads, the whole grid in one wave.
    const int64_t column_blocks = (n + kWarpSize - 1) / kWarpSize;
    const bool many = column_blocks >= static_cast<int64_t>(kManyColumnBlocksPerSm) * sms;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = dim3(static_cast<unsigned>(column_blocks));
    config.blockDim = dim3((many ? 8 : 32) * kWarpSize);
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    const float* sums = partials;
    if (many) return cudaLaunchKernelEx(&config, column_sum_kernel<8>, sums, p.partial_rows, n, dweight);
    return cudaLaunchKernelEx(&config, column_sum_kernel<32>, sums, p.partial_rows, n, dweight);
    /// [column-launch]
}

}  // namespace workbook::lesson10
