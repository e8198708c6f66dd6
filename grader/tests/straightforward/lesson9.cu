/// @file lesson9.cu
/// @brief A straightforward lesson 9 kernel: the reference's validation and descriptor (host code,
/// unchanged), with a plain kernel behind them. G threads own a row (at most 4 vectors each, 16
/// bytes or one element), x and residual of the row are held packed in registers, residual_out is
/// written as s is formed, LayerNorm's mean and then the variance about it are two row reductions
/// over the held values, and the weight and bias are read as T or fp32. Rows longer than 1024
/// threads × 4 vectors of 16 bytes take a cluster of blocks, each keeping its slice of s in shared
/// memory (README "Long rows"); such rows of narrower vectors are read again for each pass
/// (residual_out, when written, stands in for s).
/// A decode batch (128 rows or fewer of at most 1024 vectors) gets one row a block, one vector a
/// thread, its parameters loaded with the row (README "Decode batches"); up to 256 rows, one vector
/// a thread. It checks that the gate stays fair: scripts/straightforward-check grades it on a GPU.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "workbook/production_norm.h"

namespace workbook::lesson9 {
namespace {

constexpr int kIters = 4;  ///< vectors a thread holds

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

/// W parameters (weight or bias) from element W · idx on, stored as T or as fp32.
template <typename T, int W>
__device__ void load_param(const void* p, bool f32, int idx, float (&out)[W]) {
    if (!f32) {
        const Pack<T, W> v = reinterpret_cast<const Pack<T, W>*>(p)[idx];
        for (int k = 0; k < W; ++k) out[k] = to_float(v.v[k]);
    } else {
        constexpr int H = W < 4 ? W : 4;
        for (int h = 0; h < W; h += H) {
            const Pack<float, H> v = reinterpret_cast<const Pack<float, H>*>(static_cast<const float*>(p) + idx * W)[h / H];
            for (int k = 0; k < H; ++k) out[h + k] = v.v[k];
        }
    }
}

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

/// y for W elements of s from column W · idx on.
template <typename T, int W>
__device__ void store_y(const Params& a, T* yr, int idx, const float (&s)[W], float mean, float rstd) {
    float w[W], b[W];
    load_param<T, W>(a.weight, a.weight_f32, idx, w);
    if (a.bias) load_param<T, W>(a.bias, a.bias_f32, idx, b);
    Pack<T, W> out;
    for (int k = 0; k < W; ++k) out.v[k] = from_float<T>((s[k] - mean) * rstd * w[k] + (a.bias ? b[k] : 0.0f));
    reinterpret_cast<Pack<T, W>*>(yr)[idx] = out;
}

template <typename T, int W, bool RES>
__global__ void __launch_bounds__(1024) rows_in_registers(Params a, int g) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = a.cols / W;
    const int lane = threadIdx.x % g;
    const int rows_per_block = blockDim.x / g;
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block; first < a.rows;
         first += static_cast<int64_t>(gridDim.x) * rows_per_block) {
        const int64_t row = first + threadIdx.x / g;
        const bool active = row < a.rows;
        const int64_t r = active ? row : 0;
        const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(r, a.heads, a.x_s0, a.x_s1));
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + row_offset(r, a.heads, a.r_s0, a.r_s1))
                          : nullptr;
        P xv[kIters], rv[kIters];
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) {
                xv[i] = xr[lane + i * g];
                if constexpr (RES) rv[i] = rr[lane + i * g];
            }
        auto s_of = [&](int i, int k) { return to_float(xv[i].v[k]) + (RES ? to_float(rv[i].v[k]) : 0.0f); };
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec) {
                if (RES && a.residual_out) {
                    P out;
                    for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(s_of(i, k));
                    reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row_offset(r, a.heads, a.ro_s0, a.ro_s1))[lane + i * g] = out;
                }
                if (a.layer)
                    for (int k = 0; k < W; ++k) sum += s_of(i, k);
            }
        const float mean = a.layer ? row_sum(sum, g, partials) / a.cols : 0.0f;
        float sq = 0.0f;
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (active && lane + i * g < nvec)
                for (int k = 0; k < W; ++k) sq += (s_of(i, k) - mean) * (s_of(i, k) - mean);
        const float rstd = 1.0f / sqrtf(row_sum(sq, g, partials) / a.cols + a.eps);
        if (!active) continue;
        if (a.rstd && lane == 0) a.rstd[rstd_index(row, a.heads, a.rstd_s0)] = rstd;
        T* yr = static_cast<T*>(a.y) + row_offset(row, a.heads, a.y_s0, a.y_s1);
#pragma unroll
        for (int i = 0; i < kIters; ++i)
            if (lane + i * g < nvec) {
                float s[W];
                for (int k = 0; k < W; ++k) s[k] = s_of(i, k);
                store_y<T, W>(a, yr, lane + i * g, s, mean, rstd);
            }
    }
}

/// A decode batch (128 rows or fewer of at most 1024 vectors; README "Decode batches"): one row a
/// block, one vector a thread, its weight and bias loaded with it, so no memory round trip waits
/// after the reductions.
template <typename T, int W, bool RES>
__global__ void __launch_bounds__(1024) decode_rows(Params a) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = a.cols / W;
    const int idx = threadIdx.x;
    const int64_t row = blockIdx.x;
    const bool mine = idx < nvec;
    float s[W], w[W], b[W];
    if (mine) {
        const P xv = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(row, a.heads, a.x_s0, a.x_s1))[idx];
        P rv;
        if constexpr (RES) rv = reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + row_offset(row, a.heads, a.r_s0, a.r_s1))[idx];
        load_param<T, W>(a.weight, a.weight_f32, idx, w);
        if (a.bias) load_param<T, W>(a.bias, a.bias_f32, idx, b);
        for (int k = 0; k < W; ++k) s[k] = to_float(xv.v[k]) + (RES ? to_float(rv.v[k]) : 0.0f);
        if (RES && a.residual_out) {
            P out;
            for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(s[k]);
            reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row_offset(row, a.heads, a.ro_s0, a.ro_s1))[idx] = out;
        }
    }
    float sum = 0.0f;
    if (a.layer && mine)
        for (int k = 0; k < W; ++k) sum += s[k];
    const float mean = a.layer ? row_sum(sum, blockDim.x, partials) / a.cols : 0.0f;
    float sq = 0.0f;
    if (mine)
        for (int k = 0; k < W; ++k) sq += (s[k] - mean) * (s[k] - mean);
    const float rstd = 1.0f / sqrtf(row_sum(sq, blockDim.x, partials) / a.cols + a.eps);
    if (a.rstd && idx == 0) a.rstd[rstd_index(row, a.heads, a.rstd_s0)] = rstd;
    if (mine) {
        P out;
        for (int k = 0; k < W; ++k) out.v[k] = from_float<T>((s[k] - mean) * rstd * w[k] + (a.bias ? b[k] : 0.0f));
        reinterpret_cast<P*>(static_cast<T*>(a.y) + row_offset(row, a.heads, a.y_s0, a.y_s1))[idx] = out;
    }
}

/// Rows too long to hold: residual_out (and LayerNorm's sum) in a first read, the sum of squares
/// about the mean in a second, y in a third; s is read back from residual_out when it was written
/// (it may have replaced the residual), else formed again. 1024 threads.
template <typename T, int W, bool RES>
__global__ void __launch_bounds__(1024) rows_read_again(Params a) {
    using P = Pack<T, W>;
    __shared__ float partials[32];
    const int nvec = a.cols / W;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(row, a.heads, a.x_s0, a.x_s1));
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + row_offset(row, a.heads, a.r_s0, a.r_s1))
                          : nullptr;
        P* ro = RES && a.residual_out
                    ? reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row_offset(row, a.heads, a.ro_s0, a.ro_s1))
                    : nullptr;
        auto s_at = [&](int i, float (&s)[W]) {
            if (ro) {
                const P v = ro[i];
                for (int k = 0; k < W; ++k) s[k] = to_float(v.v[k]);
                return;
            }
            const P xv = xr[i];
            P rv;
            if constexpr (RES) rv = rr[i];
            for (int k = 0; k < W; ++k) s[k] = to_float(xv.v[k]) + (RES ? to_float(rv.v[k]) : 0.0f);
        };
        float sum = 0.0f;
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            float s[W];
            const P xv = xr[i];
            P rv;
            if constexpr (RES) rv = rr[i];
            for (int k = 0; k < W; ++k) s[k] = to_float(xv.v[k]) + (RES ? to_float(rv.v[k]) : 0.0f);
            if (ro) {
                P out;
                for (int k = 0; k < W; ++k) out.v[k] = from_float<T>(s[k]);
                ro[i] = out;
            }
            for (int k = 0; k < W; ++k) sum += s[k];
        }
        sum = row_sum(sum, blockDim.x, partials);
        const float mean = a.layer ? sum / a.cols : 0.0f;
        float sq = 0.0f;
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            float s[W];
            s_at(i, s);
            for (int k = 0; k < W; ++k) sq += (s[k] - mean) * (s[k] - mean);
        }
        const float rstd = 1.0f / sqrtf(row_sum(sq, blockDim.x, partials) / a.cols + a.eps);
        if (a.rstd && threadIdx.x == 0) a.rstd[rstd_index(row, a.heads, a.rstd_s0)] = rstd;
        T* yr = static_cast<T*>(a.y) + row_offset(row, a.heads, a.y_s0, a.y_s1);
        for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
            float s[W];
            s_at(i, s);
            store_y<T, W>(a, yr, i, s, mean, rstd);
        }
    }
}

/// The cluster kernel's block, and the most 16-byte vectors of s one block keeps in shared memory.
constexpr int kSliceThreads = 256;
constexpr int kSliceVecs = 4096;  // 64 KB
constexpr int kMaxCluster = 8;

/// One vector of a parameter as raw 16-byte words: one for T, two for an fp32 parameter beside
/// 16-bit rows (F32P), read through the read-only path.
template <typename T, int W, bool F32P>
struct ParamVec {
    uint4 q[F32P ? 2 : 1];
    __device__ void load(const void* p, bool f32, int idx) {
        if (F32P && f32) {
            q[0] = __ldg(static_cast<const uint4*>(p) + 2 * idx);
            q[F32P ? 1 : 0] = __ldg(static_cast<const uint4*>(p) + 2 * idx + 1);
        } else {
            q[0] = __ldg(static_cast<const uint4*>(p) + idx);
        }
    }
    __device__ void unpack(bool f32, float (&out)[W]) const {
        if (F32P && f32) {
            const float* f = reinterpret_cast<const float*>(q);
            for (int k = 0; k < W; ++k) out[k] = f[k];
        } else {
            const Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(&q[0]);
            for (int k = 0; k < W; ++k) out[k] = to_float(v.v[k]);
        }
    }
};

/// The sum of v over every thread of the cluster, the same bits in every thread: each warp's sum
/// goes to slots[bank][warp], a cluster barrier, then every warp adds all the blocks' slots in the
/// same order (lane j takes slot j). Two banks: a bank is written again only after the barrier of
/// the next sum, which no block passes before every peer has read this one.
__device__ float cluster_sum(float v, float (&slots)[2][kSliceThreads / 32], int& bank) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    const int lane = threadIdx.x % 32;
    if (lane == 0) slots[bank][threadIdx.x / 32] = v;
    cluster.sync();
    constexpr int kWarps = kSliceThreads / 32;
    const int parts = static_cast<int>(cluster.num_blocks()) * kWarps;
    float total = 0.0f;
    for (int j = lane; j < parts; j += 32) total += cluster.map_shared_rank(&slots[bank][0], j / kWarps)[j % kWarps];
    bank ^= 1;
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
    return total;
}

/// Long rows (README "Long rows: lesson 8's cluster, with every option"): a cluster of blocks a
/// row, block `rank` keeping vectors [rank · slice, (rank + 1) · slice) of s = x (+ residual),
/// rounded to T, in its shared memory, so x and the residual are read once. The statistics come
/// from the rounded s (residual_out's values). The write loop has four vectors' weight and bias in
/// flight (two with an fp32 parameter). Each cluster walks rows cluster, cluster + clusters, ...
template <typename T, int W, bool RES, bool F32P>
__global__ void rows_in_cluster(Params a, int slice) {
    namespace cg = cooperative_groups;
    using P = Pack<T, W>;
    constexpr int kLoads = RES ? 2 : 4;
    constexpr int kWrites = F32P ? 2 : 4;
    extern __shared__ __align__(16) unsigned char slice_bytes[];
    P* held = reinterpret_cast<P*>(slice_bytes);
    __shared__ float slots[2][kSliceThreads / 32];
    cg::cluster_group cluster = cg::this_cluster();
    const int blocks = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
    const int nvec = a.cols / W;
    const int begin = rank * slice;
    const int count = std::max(0, std::min(slice, nvec - begin));
    int bank = 0;
    for (int64_t row = blockIdx.x / blocks; row < a.rows; row += gridDim.x / blocks) {
        const P* xr = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row_offset(row, a.heads, a.x_s0, a.x_s1)) + begin;
        const P* rr = RES ? reinterpret_cast<const P*>(static_cast<const T*>(a.residual) + row_offset(row, a.heads, a.r_s0, a.r_s1)) + begin
                          : nullptr;
        P* ro = RES && a.residual_out
                    ? reinterpret_cast<P*>(static_cast<T*>(a.residual_out) + row_offset(row, a.heads, a.ro_s0, a.ro_s1)) + begin
                    : nullptr;
        float sum = 0.0f, sq = 0.0f;
        for (int base = threadIdx.x; base < count; base += kLoads * kSliceThreads) {
            P xv[kLoads], rv[kLoads];
#pragma unroll
            for (int u = 0; u < kLoads; ++u) {
                const int j = base + u * kSliceThreads;
                if (j < count) {
                    xv[u] = xr[j];
                    if constexpr (RES) rv[u] = rr[j];
                }
            }
#pragma unroll
            for (int u = 0; u < kLoads; ++u) {
                const int j = base + u * kSliceThreads;
                if (j >= count) continue;
                P sv = xv[u];
                if constexpr (RES)
                    for (int k = 0; k < W; ++k) sv.v[k] = from_float<T>(to_float(xv[u].v[k]) + to_float(rv[u].v[k]));
                if (ro) ro[j] = sv;
                held[j] = sv;
                for (int k = 0; k < W; ++k) {
                    const float f = to_float(sv.v[k]);
                    sum += f;
                    sq += f * f;
                }
            }
        }
        float mean = 0.0f;
        if (a.layer) {
            // The squares about the mean, from this thread's own vectors of the slice.
            mean = cluster_sum(sum, slots, bank) / a.cols;
            sq = 0.0f;
            for (int j = threadIdx.x; j < count; j += kSliceThreads)
                for (int k = 0; k < W; ++k) {
                    const float d = to_float(held[j].v[k]) - mean;
                    sq += d * d;
                }
        }
        const float rstd = 1.0f / sqrtf(cluster_sum(sq, slots, bank) / a.cols + a.eps);
        if (a.rstd && rank == 0 && threadIdx.x == 0) a.rstd[rstd_index(row, a.heads, a.rstd_s0)] = rstd;
        P* yr = reinterpret_cast<P*>(static_cast<T*>(a.y) + row_offset(row, a.heads, a.y_s0, a.y_s1)) + begin;
        for (int base = threadIdx.x; base < count; base += kWrites * kSliceThreads) {
            ParamVec<T, W, F32P> wv[kWrites], bv[kWrites];
#pragma unroll
            for (int u = 0; u < kWrites; ++u) {
                const int j = base + u * kSliceThreads;
                if (j < count) {
                    wv[u].load(a.weight, a.weight_f32, begin + j);
                    if (a.bias) bv[u].load(a.bias, a.bias_f32, begin + j);
                }
            }
#pragma unroll
            for (int u = 0; u < kWrites; ++u) {
                const int j = base + u * kSliceThreads;
                if (j >= count) continue;
                float w[W], b[W];
                wv[u].unpack(a.weight_f32, w);
                if (a.bias) bv[u].unpack(a.bias_f32, b);
                const P sv = held[j];
                P out;
                for (int k = 0; k < W; ++k)
                    out.v[k] = from_float<T>((to_float(sv.v[k]) - mean) * rstd * w[k] + (a.bias ? b[k] : 0.0f));
                yr[j] = out;
            }
        }
    }
    cluster.sync();  // no block leaves while a peer may still read its slots
}

int sm_count() {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 132;
    }
    return sms;
}

/// A cluster of ceil(nvec / 4096) blocks a row, as many clusters as the device keeps resident.
template <typename T, int W, bool RES, bool F32P>
cudaError_t launch_cluster(const Params& a, int nvec, cudaStream_t stream) {
    const int blocks = (nvec + kSliceVecs - 1) / kSliceVecs;
    const int slice = (nvec + blocks - 1) / blocks;
    const size_t bytes = static_cast<size_t>(slice) * sizeof(Pack<T, W>);
    auto kernel = rows_in_cluster<T, W, RES, F32P>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (err != cudaSuccess) return err;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = blocks;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);  // one cluster: the occupancy query asks what fits
    config.blockDim = dim3(kSliceThreads);
    config.dynamicSmemBytes = bytes;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess || clusters < 1) {
        (void)cudaGetLastError();
        clusters = std::max(1, sm_count() / blocks);
    }
    config.gridDim = dim3(static_cast<unsigned>(std::min<int64_t>(a.rows, clusters) * blocks));
    return cudaLaunchKernelEx(&config, kernel, a, slice);
}

using Launcher = cudaError_t (*)(const Params&, cudaStream_t);

template <typename T, int W, bool RES>
cudaError_t launch(const Params& a, cudaStream_t stream) {
    const int nvec = a.cols / W;
    constexpr bool kFull = W * sizeof(T) == 16;
    if constexpr (kFull) {
        if (nvec > 1024 * kIters && nvec <= kMaxCluster * kSliceVecs) {
            if constexpr (sizeof(T) == 2)
                if (a.weight_f32 || a.bias_f32) return launch_cluster<T, W, RES, true>(a, nvec, stream);
            return launch_cluster<T, W, RES, false>(a, nvec, stream);
        }
    }
    if (nvec > 1024 * kIters) {
        rows_read_again<T, W, RES><<<static_cast<int>(std::min<int64_t>(a.rows, 65536)), 1024, 0, stream>>>(a);
        return cudaGetLastError();
    }
    // A decode batch: one row a block, the parameters loaded with the row.
    if (a.rows <= 128 && nvec <= 1024) {
        int block = 32;
        while (block < nvec) block *= 2;
        decode_rows<T, W, RES><<<static_cast<int>(a.rows), block, 0, stream>>>(a);
        return cudaGetLastError();
    }
    // A few rows (a decode batch) cannot fill the GPU: one vector a thread, the shortest path.
    const int per_thread = a.rows <= 256 ? 1 : kIters;
    int g = 4;
    while (g < 1024 && g * per_thread < nvec) g *= 2;
    const int block = g <= 32 ? 256 : g;  // a row group past a warp is the whole block
    const int64_t blocks = (a.rows + block / g - 1) / (block / g);
    rows_in_registers<T, W, RES><<<static_cast<int>(std::min<int64_t>(blocks, 65536)), block, 0, stream>>>(a, g);
    return cudaGetLastError();
}

template <typename T>
Launcher pick(int vec, bool res) {
    constexpr int kFull = 16 / sizeof(T);
    if (vec == kFull) return res ? &launch<T, kFull, true> : &launch<T, kFull, false>;
    return res ? &launch<T, 1, true> : &launch<T, 1, false>;
}

// The validation below is the reference's (host code; the gate is about the kernel).

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

bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

struct NormDescriptor {
    Params params;
    Launcher launcher;
};

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

    Launcher launcher = nullptr;
    switch (p.x.dtype) {
        case DataType::f16: launcher = pick<__half>(vec, res); break;
        case DataType::bf16: launcher = pick<__nv_bfloat16>(vec, res); break;
        default: launcher = pick<float>(vec, res); break;
    }
    *out = new NormDescriptor{a, launcher};
    return Status::success;
}

cudaError_t norm_launch(const NormDescriptor* desc, cudaStream_t stream) {
    if (!desc) return cudaErrorInvalidValue;
    if (desc->params.rows == 0) return cudaSuccess;
    return desc->launcher(desc->params, stream);
}

void norm_destroy(NormDescriptor* desc) { delete desc; }

}  // namespace workbook::lesson9
