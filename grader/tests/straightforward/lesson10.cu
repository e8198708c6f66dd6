/// @file lesson10.cu
/// @brief A straightforward lesson 10 kernel: what the lesson's README and stub teach without the
/// reference's tuning. Short rows (up to 128 vectors) take a warp per row group, 8 groups a block,
/// the block's warps adding their column sums in warp order into one partial row; longer rows take
/// a block, or a cluster of 2 to 8 blocks splitting the row's columns, whose row sum m meets
/// through distributed shared memory as tagged messages (README "Messages instead of barriers").
/// Every thread holds its weight vectors and its columns' dweight sums in registers across the rows
/// it visits, and the groups are as many as the device keeps resident (two blocks an SM). A
/// second kernel, a programmatic dependent launch, adds the partial rows column by column in a fixed
/// order. Few rows (256 or less, README "The plan") take one vector a thread, a block or cluster a
/// row, and blocks of the same launch that add dweight straight from dy, x and rstd: no partials
/// and no second kernel. It checks that the gate stays fair: scripts/straightforward-check grades
/// it on a GPU.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "workbook/rmsnorm_backward.h"

namespace workbook::lesson10 {
namespace {

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

template <typename T>
struct Args {
    const T* dy;
    const T* x;
    const T* weight;
    const float* rstd;
    T* dx;
    float* partials;  ///< null in a few-rows launch
    float* dweight;   ///< written by a few-rows launch's column blocks
    int64_t dys, xs, dxs, rows, groups, row_blocks;
    int cols;
};

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// Short rows: warp w of block b is row group 8b + w and walks rows group, group + groups, ...;
/// lane l owns vectors l, l + 32, ... (V of them). At the end the block's warps add their sums
/// into shared memory in warp order, and the block writes one partial row.
template <typename T, int W, int V>
__global__ void __launch_bounds__(256) warp_groups(Args<T> a) {
    using P = Pack<T, W>;
    extern __shared__ float sums[];  // cols floats
    cudaTriggerProgrammaticLaunchCompletion();  // the column kernel may start its blocks
    const int nvec = a.cols / W;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int idx[V];
    P w[V];
    float acc[V][W];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        idx[i] = lane + i * 32;
        if (idx[i] < nvec) w[i] = reinterpret_cast<const P*>(a.weight)[idx[i]];
#pragma unroll
        for (int k = 0; k < W; ++k) acc[i][k] = 0.0f;
    }
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + warp; row < a.rows; row += a.groups) {
        const P* dyr = reinterpret_cast<const P*>(a.dy + row * a.dys);
        const P* xr = reinterpret_cast<const P*>(a.x + row * a.xs);
        P dyv[V], xv[V];
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec) {
                dyv[i] = dyr[idx[i]];
                xv[i] = xr[idx[i]];
            }
        const float rstd = a.rstd[row];
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec)
                for (int k = 0; k < W; ++k)
                    dot += to_float(dyv[i].v[k]) * to_float(w[i].v[k]) * to_float(xv[i].v[k]) * rstd;
        const float m = warp_sum(dot) / a.cols;
        P* dxr = reinterpret_cast<P*>(a.dx + row * a.dxs);
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec) {
                P out;
                for (int k = 0; k < W; ++k) {
                    const float xhat = to_float(xv[i].v[k]) * rstd, dyk = to_float(dyv[i].v[k]);
                    out.v[k] = from_float<T>(rstd * (dyk * to_float(w[i].v[k]) - xhat * m));
                    acc[i][k] += dyk * xhat;
                }
                dxr[idx[i]] = out;
            }
    }
    for (int turn = 0; turn < 8; ++turn) {
        if (warp == turn)
#pragma unroll
            for (int i = 0; i < V; ++i)
                if (idx[i] < nvec)
                    for (int k = 0; k < W; ++k) {
                        float& slot = sums[idx[i] * W + k];
                        slot = turn == 0 ? acc[i][k] : slot + acc[i][k];
                    }
        __syncthreads();
    }
    float* out = a.partials + static_cast<int64_t>(blockIdx.x) * a.cols;
    for (int c = threadIdx.x; c < a.cols; c += 256) out[c] = sums[c];
}

/// Few rows: block `col_block` adds dweight's columns 32 · col_block + lane straight from dy, x and
/// rstd; warp w adds rows w, w + warps, ..., then warp 0 adds the warp sums in warp order.
template <typename T>
__device__ void direct_columns(const Args<T>& a, int64_t col_block) {
    __shared__ float slices[32][33];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int64_t c = col_block * 32 + lane;
    float sum = 0.0f;
    if (c < a.cols)
        for (int64_t r = warp; r < a.rows; r += warps)
            sum += to_float(a.dy[r * a.dys + c]) * (to_float(a.x[r * a.xs + c]) * a.rstd[r]);
    slices[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && c < a.cols) {
        float total = 0.0f;
        for (int s = 0; s < warps; ++s) total += slices[s][lane];
        a.dweight[c] = total;
    }
}

constexpr unsigned long long kNoRow = ~0ull;

/// Row group blockIdx.x / cluster size walks rows group, group + groups, ...; block `rank` of its
/// cluster owns vectors [rank · blockDim · V, (rank + 1) · blockDim · V) of every row. A cluster's
/// blocks send each other their part of the row sum as one 8-byte message (row, part) into slot
/// [bank][rank] of the peer's shared memory, and wait only for their own slots to hold this row.
template <typename T, int W, int V>
__global__ void row_groups(Args<T> a) {
    namespace cg = cooperative_groups;
    using P = Pack<T, W>;
    cudaTriggerProgrammaticLaunchCompletion();  // the column kernel may start its blocks
    if (blockIdx.x >= a.row_blocks) {
        direct_columns(a, blockIdx.x - a.row_blocks);
        return;
    }
    __shared__ float warp_sums[2][32];
    __shared__ unsigned long long inbox[2][8];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = static_cast<int>(cluster.block_rank()), blocks = static_cast<int>(cluster.num_blocks());
    const int64_t group = blockIdx.x / blocks;
    const int nvec = a.cols / W;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    int idx[V];
    P w[V];
    float acc[V][W];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        idx[i] = rank * static_cast<int>(blockDim.x) * V + static_cast<int>(threadIdx.x) + i * static_cast<int>(blockDim.x);
        if (idx[i] < nvec) w[i] = reinterpret_cast<const P*>(a.weight)[idx[i]];
#pragma unroll
        for (int k = 0; k < W; ++k) acc[i][k] = 0.0f;
    }
    if (blocks > 1) {
        if (threadIdx.x < 16) inbox[threadIdx.x / 8][threadIdx.x % 8] = kNoRow;
        cluster.sync();  // every inbox is empty before any peer writes into it
    }
    int bank = 0;
    for (int64_t row = group; row < a.rows; row += a.groups) {
        const P* dyr = reinterpret_cast<const P*>(a.dy + row * a.dys);
        const P* xr = reinterpret_cast<const P*>(a.x + row * a.xs);
        P dyv[V], xv[V];
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec) {
                dyv[i] = dyr[idx[i]];
                xv[i] = xr[idx[i]];
            }
        const float rstd = a.rstd[row];
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec)
                for (int k = 0; k < W; ++k)
                    dot += to_float(dyv[i].v[k]) * to_float(w[i].v[k]) * to_float(xv[i].v[k]) * rstd;
        dot = warp_sum(dot);
        // Two banks: a bank is written again two rows later, after every warp has passed the
        // barrier of the row between, so one barrier a row is enough.
        if (lane == 0) warp_sums[bank][warp] = dot;
        __syncthreads();
        dot = warp_sum(lane < warps ? warp_sums[bank][lane] : 0.0f);
        if (blocks > 1) {
            const unsigned tag = static_cast<unsigned>(row);
            if (threadIdx.x < blocks) {
                volatile unsigned long long* slot = cluster.map_shared_rank(&inbox[bank][rank], static_cast<int>(threadIdx.x));
                *slot = static_cast<unsigned long long>(tag) << 32 | __float_as_uint(dot);
            }
            float part = 0.0f;
            if (lane < blocks) {
                volatile unsigned long long* mine = &inbox[bank][lane];
                unsigned long long message = *mine;
                while (static_cast<unsigned>(message >> 32) != tag) message = *mine;
                part = __uint_as_float(static_cast<unsigned>(message));
            }
            dot = warp_sum(part);  // the parts in rank order: the same bits in every block
        }
        bank ^= 1;
        const float m = dot / a.cols;
        P* dxr = reinterpret_cast<P*>(a.dx + row * a.dxs);
#pragma unroll
        for (int i = 0; i < V; ++i)
            if (idx[i] < nvec) {
                P out;
                for (int k = 0; k < W; ++k) {
                    const float xhat = to_float(xv[i].v[k]) * rstd, dyk = to_float(dyv[i].v[k]);
                    out.v[k] = from_float<T>(rstd * (dyk * to_float(w[i].v[k]) - xhat * m));
                    acc[i][k] += dyk * xhat;
                }
                dxr[idx[i]] = out;
            }
    }
    if (blocks > 1) cluster.sync();  // no block leaves while a peer may still write into its inbox
    if (a.partials == nullptr) return;
    float* out = a.partials + group * a.cols;
#pragma unroll
    for (int i = 0; i < V; ++i)
        if (idx[i] < nvec)
            for (int k = 0; k < W; ++k) out[idx[i] * W + k] = acc[i][k];
}

/// dweight[c] = sum of the partial rows' column c: lane l of every warp owns column 32 · block + l,
/// warp w adds partial rows w, w + 8, ... (eight loads in flight), then warp 0 adds the 8 slices in
/// order. A programmatic dependent launch: it waits here until the row kernel's partials are written.
__global__ void column_sums(const float* partials, int64_t groups, int cols, float* dweight) {
    __shared__ float slices[8][33];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int c = blockIdx.x * 32 + lane;
    cudaGridDependencySynchronize();
    float sum = 0.0f;
    if (c < cols) {
        int64_t g = warp;
        for (; g + 7 * 8 < groups; g += 8 * 8) {
            float v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = partials[(g + j * 8) * cols + c];
#pragma unroll
            for (int j = 0; j < 8; ++j) sum += v[j];
        }
        for (; g < groups; g += 8) sum += partials[g * cols + c];
    }
    slices[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && c < cols) {
        float total = 0.0f;
        for (int s = 0; s < 8; ++s) total += slices[s][lane];
        dweight[c] = total;
    }
}

/// How a call runs: warps or blocks (or clusters) as row groups, and how many of them.
struct Plan {
    bool warps = false, few = false;
    int v = 4, threads = 256, cluster = 1;
    int64_t groups = 0, partial_rows = 0, col_blocks = 0;
};

int sm_count() {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 132;
    }
    return sms;
}

cudaLaunchConfig_t block_config(const Plan& p, cudaLaunchAttribute* attribute, cudaStream_t stream) {
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = p.cluster;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.groups * p.cluster + p.col_blocks));
    config.blockDim = dim3(p.threads);
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = p.cluster > 1 ? 1 : 0;  // a lone block launches as a plain grid
    return config;
}

/// Clusters of this shape the device keeps resident at once (a cluster that does not fit would
/// wait for a second wave).
template <typename T, int W, int V>
int64_t resident_clusters(const Plan& p) {
    cudaLaunchAttribute attribute[1];
    cudaLaunchConfig_t config = block_config(p, attribute, nullptr);
    config.gridDim = dim3(p.cluster);  // one cluster: the query asks what fits, not what is launched
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, row_groups<T, W, V>, &config) != cudaSuccess || clusters < 1) {
        (void)cudaGetLastError();
        clusters = std::max(1, sm_count() * 2 / p.cluster);
    }
    return clusters;
}

/// Row groups the device keeps resident: two blocks of up to 256 threads an SM (README "The plan":
/// one loads while the other waits at a barrier), one of 512; clusters as the occupancy query says.
template <typename T, int W>
int64_t resident_for(const Plan& p) {
    if (p.cluster == 1) return static_cast<int64_t>(sm_count()) * (p.threads <= 256 ? 2 : 1);
    if (p.v == 4) return resident_clusters<T, W, 4>(p);
    if (p.v == 8) return resident_clusters<T, W, 8>(p);
    return resident_clusters<T, W, 16>(p);
}

/// The plan for rows of nvec vectors of W elements: a warp a row group up to 128 vectors (4 a lane);
/// few rows (256 or less), one vector a thread in a block of up to 1024 threads (a cluster
/// beyond), a group a row, and column blocks after the rows; else V vectors a thread in blocks of up
/// to 256 threads (512 for 16), the smallest cluster that holds the row, and as many groups as the
/// device keeps resident, at most one a row.
template <typename T, int W>
Plan plan_for(int64_t rows, int nvec) {
    Plan p;
    if (nvec <= 128) {
        p.warps = true;
        const int64_t blocks = std::min<int64_t>((rows + 7) / 8, static_cast<int64_t>(sm_count()) * 8);
        p.groups = blocks * 8;
        p.partial_rows = blocks;
        return p;
    }
    if (rows <= 256 && nvec <= 8 * 1024) {
        p.few = true;
        p.v = 1;
        while (nvec > p.cluster * 1024) p.cluster *= 2;
        p.threads = ((nvec + p.cluster - 1) / p.cluster + 31) / 32 * 32;
        p.groups = rows;
        const int64_t cols = static_cast<int64_t>(nvec) * W;
        p.col_blocks = ((cols + 31) / 32 + p.cluster - 1) / p.cluster * p.cluster;
        return p;
    }
    p.v = nvec <= 8 * 256 * 4 ? 4 : nvec <= 8 * 256 * 8 ? 8 : 16;
    const int max_threads = p.v == 16 ? 512 : 256;
    while (p.cluster < 8 && nvec > p.cluster * max_threads * p.v) p.cluster *= 2;
    const int per_block = (nvec + p.cluster * p.v - 1) / (p.cluster * p.v);
    p.threads = (per_block + 31) / 32 * 32;
    p.groups = std::min<int64_t>(rows, resident_for<T, W>(p));
    p.partial_rows = p.groups;
    return p;
}

template <typename T, int W, int V>
cudaError_t launch_blocks(const Args<T>& a, const Plan& p, cudaStream_t stream) {
    cudaLaunchAttribute attribute[1];
    const cudaLaunchConfig_t config = block_config(p, attribute, stream);
    return cudaLaunchKernelEx(&config, row_groups<T, W, V>, a);
}

template <typename T, int W>
cudaError_t launch(const Args<T>& a, const Plan& p, cudaStream_t stream) {
    if (p.warps) {
        warp_groups<T, W, 4><<<static_cast<unsigned>(p.partial_rows), 256, a.cols * sizeof(float), stream>>>(a);
        return cudaGetLastError();
    }
    if (p.v == 1) return launch_blocks<T, W, 1>(a, p, stream);
    if (p.v == 4) return launch_blocks<T, W, 4>(a, p, stream);
    if (p.v == 8) return launch_blocks<T, W, 8>(a, p, stream);
    return launch_blocks<T, W, 16>(a, p, stream);
}

/// f(std::integral_constant<int, W>{}) for vectors of w elements (16 bytes down to 1 element): the
/// one place a run-time width becomes the compile-time W of the plan and the kernels.
template <typename T, typename F>
auto at_width(int w, F f) {
    if (w == 8) return f(std::integral_constant<int, (sizeof(T) == 2 ? 8 : 4)>{});
    if (w == 4) return f(std::integral_constant<int, 4>{});
    if (w == 2) return f(std::integral_constant<int, 2>{});
    return f(std::integral_constant<int, 1>{});
}

template <typename T>
Plan plan_at_width(int w, int64_t rows, int64_t cols) {
    return at_width<T>(w, [&](auto W) {
        constexpr int kW = decltype(W)::value;
        return plan_for<T, kW>(rows, static_cast<int>(cols / kW));
    });
}

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

template <typename T>
size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols) {
    if (rows <= 0 || cols < 1 || cols > kMaxCols) return 0;
    // The call's vector width depends on its pointers: the most any width of cols needs.
    int64_t partial_rows = 0;
    for (int w = 16 / static_cast<int>(sizeof(T)); w >= 1; w /= 2)
        if (cols % w == 0) partial_rows = std::max(partial_rows, plan_at_width<T>(w, rows, cols).partial_rows);
    return static_cast<size_t>(partial_rows) * static_cast<size_t>(cols) * sizeof(float);
}

template <typename T>
cudaError_t rmsnorm_backward(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride, const T* weight,
                             const float* rstd, T* dx, int64_t dx_row_stride, float* dweight, void* workspace,
                             size_t workspace_bytes, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > kMaxCols) return cudaErrorInvalidValue;
    if (rows == 0) return cudaMemsetAsync(dweight, 0, static_cast<size_t>(cols) * sizeof(float), stream);
    const size_t needed = rmsnorm_backward_workspace_bytes<T>(rows, cols);
    if (workspace_bytes < needed || (needed > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
    int w = 16 / sizeof(T);
    while (w > 1) {
        const int bytes = w * sizeof(T);
        if (cols % w == 0 && aligned(dy, bytes) && aligned(x, bytes) && aligned(weight, bytes) && aligned(dx, bytes) &&
            (rows == 1 || (dy_row_stride % w == 0 && x_row_stride % w == 0 && dx_row_stride % w == 0)))
            break;
        w /= 2;
    }
    const Plan p = plan_at_width<T>(w, rows, cols);
    const Args<T> a{dy, x, weight, rstd, dx, p.few ? nullptr : static_cast<float*>(workspace), dweight, dy_row_stride,
                    x_row_stride, dx_row_stride, rows, p.groups, p.groups * p.cluster, static_cast<int>(cols)};
    const cudaError_t err = at_width<T>(w, [&](auto W) { return launch<T, decltype(W)::value>(a, p, stream); });
    if (err != cudaSuccess || p.few) return err;
    // The column kernel as a programmatic dependent launch: its blocks take the SMs the row blocks
    // leave, and wait in the kernel for the partials.
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>((cols + 31) / 32));
    config.blockDim = dim3(256);
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, column_sums, static_cast<const float*>(workspace), p.partial_rows,
                              static_cast<int>(cols), dweight);
}

}  // namespace workbook::lesson10
