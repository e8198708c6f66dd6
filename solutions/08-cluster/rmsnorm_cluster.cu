/**
 * @file rmsnorm_cluster.cu
 * @brief Lesson 8 reference: RMSNorm of rows up to 262144 cols, each long row split over
 *        the blocks of a thread-block cluster and kept on chip.
 *
 * What it shows:
 *  - why one block cannot hold a long row: a 262144-col fp16 row is 512 KB, more than an
 *    SM's 228 KB of shared memory and 256 KB of registers together, so a single block
 *    must either read the row twice from HBM or split it;
 *  - the split: a cluster of 2 to 8 blocks (one GPC, scheduled together), each keeping its
 *    64 KB slice of the row in its own shared memory, read from HBM once and written once;
 *  - the exchange: every block publishes its partial sum of squares in shared memory,
 *    `cluster.sync()`, then reads all partials from its peers' shared memory through
 *    `cluster.map_shared_rank` (distributed shared memory), and a second cluster barrier
 *    keeps every block alive until no peer can still be reading from it;
 *  - the launch: `cudaLaunchKernelEx` with `cudaLaunchAttributeClusterDimension`, the
 *    cluster size chosen from the row's bytes, dynamic shared memory above 48 KB opted in.
 *
 * Rows short enough for one block's registers take lesson 4's kernel (a few lanes, a warp
 * or a block per row); the same alignment rules and 64-bit offsets apply to both.
 *
 * What it leaves out: TMA bulk copies into shared memory, keeping the weight on chip across
 * rows (it is re-read from L2 per row), and PDL (lesson 7). The only non-portable piece,
 * a cluster of 16 for fp32 rows past 131072 cols, is asked for and falls back to 8.
 * Clusters need sm_90 or newer: on older devices the entry point returns cudaErrorNotSupported.
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson8 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxCols = 262144;
/// Threads a Hopper SM keeps resident; sizes the grid of the register kernel.
constexpr int kThreadsPerSm = 2048;
/// Largest grid.x a launch accepts.
constexpr int64_t kMaxGridX = 2147483647;
/// Longest row (in vectors) the register kernel holds: 512 threads × 8 vectors, 64 KB at 16 bytes.
constexpr int kRegisterRowVecs = 4096;
/// Bytes of row one cluster block keeps in shared memory: three such blocks fit an SM
/// (3 × 64 KB of its 228 KB), so while one block waits at a cluster barrier the others
/// still have loads or stores in flight.
constexpr int64_t kSliceTargetBytes = 64 * 1024;
/// Largest portable cluster. Only fp32 rows past 131072 cols need more blocks of 64 KB;
/// they ask for 16 (non-portable) and fall back to 8 blocks of 128 KB.
constexpr int kMaxPortableCluster = 8;
constexpr int kMaxCluster = 16;
/// Threads of a cluster-kernel block: 16 vectors of a 64 KB slice each.
constexpr int kClusterBlock = 256;
/// Cluster blocks per SM the register budget is sized for (256 threads × 80 registers × 3).
constexpr int kClusterBlocksPerSm = 3;
/// Independent accesses a thread has in flight, reading x and writing y.
constexpr int kLoadUnroll = 4;
constexpr int kStoreUnroll = 4;

/// fp32 view of an element: all arithmetic is done in fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
/// bf16 is the top half of an fp32: a shift. Written out, it lets the compiler keep packed
/// values packed; the intrinsic's form makes it hold fp32 copies instead.
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

/// VEC elements moved by one 2-, 4-, 8- or 16-byte access (the alignment tells the compiler).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// Sum over G consecutive lanes (G a power of two ≤ 32); xor offsets below G stay in the group.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}


/// Two fp32 values rounded to a packed pair of T in one instruction (cvt.rn.f16x2.f32 or
/// cvt.rn.bf16x2.f32), which also saves the registers of rounding them one at a time.
__device__ __forceinline__ void store_pair(__half* out, float a, float b) {
    *reinterpret_cast<__half2*>(out) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* out, float a, float b) {
    *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(a, b);
}

/// A packed pair of T widened to two fp32 values.
__device__ __forceinline__ float2 load_pair(const __half* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__device__ __forceinline__ float2 load_pair(const __nv_bfloat16* p) {
    const unsigned bits = *reinterpret_cast<const unsigned*>(p);
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
}

/// Sum of squares of one pack, in fp32.
template <typename T, int VEC>
__device__ __forceinline__ float sum_squares(const Pack<T, VEC>& p, float acc) {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 f = load_pair(&p.v[k]);
            acc = fmaf(f.x, f.x, acc);
            acc = fmaf(f.y, f.y, acc);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float f = to_float(p.v[k]);
            acc = fmaf(f, f, acc);
        }
    }
    return acc;
}

/// y = x · inv_rms · w for one pack, rounded once at the end.
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> scale(const Pack<T, VEC>& x, const Pack<T, VEC>& w, float inv_rms) {
    Pack<T, VEC> out;
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 xf = load_pair(&x.v[k]);
            const float2 wf = load_pair(&w.v[k]);
            store_pair(&out.v[k], xf.x * inv_rms * wf.x, xf.y * inv_rms * wf.y);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) out.v[k] = from_float<T>(to_float(x.v[k]) * inv_rms * to_float(w.v[k]));
    }
    return out;
}

/// Rows that fit one block's registers (lesson 4's kernel): a group of G threads per row
/// (G ≤ 32: BLOCK/G rows per block; G == BLOCK: one row per block), ITERS vectors a thread.
template <typename T, int VEC, int G, int ITERS, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_rows_kernel(const T* __restrict__ x, int64_t x_row_stride, const T* __restrict__ weight,
                        T* __restrict__ y, int64_t y_row_stride, int64_t rows, int cols, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    static_assert(G <= kWarpSize ? BLOCK % G == 0 : BLOCK == G, "a row group is a sub-warp or the block");
    using P = Pack<T, VEC>;
    constexpr int kRowsPerBlock = BLOCK / G;
    // Short rows keep the weight in registers for every row a thread visits; long rows
    // would lose occupancy to it and read it (from L2) after the reduction instead.
    constexpr bool kCacheWeight = G <= kWarpSize && ITERS * sizeof(P) <= 64;
    __shared__ float partials[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

    const int nvec = cols / VEC;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const P* w = reinterpret_cast<const P*>(weight);

    P wv[ITERS];
    if constexpr (kCacheWeight) {
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (idx < nvec) wv[i] = w[idx];
        }
    }

    int bank = 0;
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < rows;
        const int64_t r = active ? row : 0;
        const P* xr = reinterpret_cast<const P*>(x + r * x_row_stride);
        P* yr = reinterpret_cast<P*>(y + r * y_row_stride);

        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) xv[i] = xr[idx];
        }
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) sum = sum_squares(xv[i], sum);
        }

        if constexpr (G <= kWarpSize) {
            sum = group_sum<G>(sum);
        } else {
            // Two banks alternate between rows, so one barrier per row is enough.
            sum = group_sum<kWarpSize>(sum);
            if (threadIdx.x % kWarpSize == 0) partials[bank][threadIdx.x / kWarpSize] = sum;
            __syncthreads();
            const int l = threadIdx.x % kWarpSize;
            sum = group_sum<kWarpSize>(l < BLOCK / kWarpSize ? partials[bank][l] : 0.0f);
            bank ^= 1;
        }
        const float inv_rms = rsqrtf(sum * inv_cols + eps);

        if (active) {
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    if constexpr (kCacheWeight) {
                        yr[idx] = scale(xv[i], wv[i], inv_rms);
                    } else {
                        yr[idx] = scale(xv[i], w[idx], inv_rms);
                    }
                }
            }
        }
    }
#endif
}

/**
 * Long rows: one cluster per row, block `rank` of the cluster owns vectors
 * [rank·slice_vecs, (rank+1)·slice_vecs) of it and keeps them in dynamic shared memory
 * between the sum of squares and the scaling. A grid with fewer clusters than rows walks
 * the rows; every block of a cluster then runs the same iterations, so the cluster
 * barriers always match.
 */
template <typename T, int VEC, int BLOCK>
__global__ void __launch_bounds__(BLOCK, kClusterBlocksPerSm)
    rmsnorm_cluster_kernel(const T* __restrict__ x, int64_t x_row_stride, const T* __restrict__ weight,
                           T* __restrict__ y, int64_t y_row_stride, int64_t rows, int cols, int slice_vecs,
                           float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    using P = Pack<T, VEC>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    P* slice = reinterpret_cast<P*>(smem_raw);
    __shared__ float warp_sums[BLOCK / kWarpSize];
    __shared__ float block_partial;

    cg::cluster_group cluster = cg::this_cluster();
    const int blocks = static_cast<int>(cluster.num_blocks());
    // The slice follows the rank inside the cluster, not blockIdx.x: block ranks run
    // 0..blocks-1 in every cluster, and they are what map_shared_rank speaks.
    const int rank = static_cast<int>(cluster.block_rank());
    const int nvec = cols / VEC;
    const int begin = rank * slice_vecs;
    const int count = nvec - begin < slice_vecs ? (nvec - begin > 0 ? nvec - begin : 0) : slice_vecs;
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    constexpr int warps = BLOCK / kWarpSize;
    // BLOCK is a template parameter so that the stride between one thread's accesses is a
    // constant the compiler can fold into the addresses.
    constexpr int step = BLOCK;
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const P* w = reinterpret_cast<const P*>(weight) + begin;
    const int64_t clusters = gridDim.x / blocks;

    for (int64_t row = blockIdx.x / blocks; row < rows; row += clusters) {
        // 64-bit offsets: rows × stride passes 2^31 elements on large tensors.
        const P* xr = reinterpret_cast<const P*>(x + row * x_row_stride) + begin;
        P* yr = reinterpret_cast<P*>(y + row * y_row_stride) + begin;

        /// [slice-load]
        // The only read of x: kLoadUnroll independent loads per thread in flight, each vector
        // parked in this block's shared memory and squared on the way.
        float sum = 0.0f;
        for (int base = threadIdx.x; base < count; base += kLoadUnroll * step) {
            P v[kLoadUnroll];
#pragma unroll
            for (int u = 0; u < kLoadUnroll; ++u)
                if (base + u * step < count) v[u] = xr[base + u * step];
#pragma unroll
            for (int u = 0; u < kLoadUnroll; ++u)
                if (base + u * step < count) {
                    slice[base + u * step] = v[u];
                    sum = sum_squares(v[u], sum);
                }
        }
        /// [slice-load]

        // This block's partial: warps → shared memory → warp 0.
        sum = group_sum<kWarpSize>(sum);
        if (lane == 0) warp_sums[warp] = sum;
        __syncthreads();
        if (warp == 0) {
            const float p = group_sum<kWarpSize>(lane < warps ? warp_sums[lane] : 0.0f);
            if (lane == 0) block_partial = p;
        }

        /// [dsmem-exchange]
        // Barrier 1: every block of the cluster has written block_partial, and the
        // barrier's release/acquire makes those writes visible cluster-wide. Reading a
        // peer's slot before it would return whatever was there: a stale row's partial.
        cluster.sync();
        // Lane r reads block r's partial from r's shared memory; every warp of every block
        // adds the same values in the same order, so all agree on inv_rms to the bit.
        float total = lane < blocks ? *cluster.map_shared_rank(&block_partial, lane) : 0.0f;
        total = group_sum<kWarpSize>(total);
        // Barrier 2, split: arrive now (done reading peers), wait at the end of the row.
        // No block may leave, or overwrite block_partial for its next row, while a peer
        // can still read it; the arrive/wait split hides the barrier behind the writes.
        cluster.barrier_arrive();
        /// [dsmem-exchange]

        const float inv_rms = rsqrtf(total * inv_cols + eps);
        // The only write of y, from shared memory; the weight slice comes from L2. Whole
        // packs are copied out of shared memory first: one 16-byte access each, not VEC.
        for (int base = threadIdx.x; base < count; base += kStoreUnroll * step) {
            P xv[kStoreUnroll];
            P wv[kStoreUnroll];
#pragma unroll
            for (int u = 0; u < kStoreUnroll; ++u)
                if (base + u * step < count) {
                    wv[u] = w[base + u * step];
                    xv[u] = slice[base + u * step];
                }
#pragma unroll
            for (int u = 0; u < kStoreUnroll; ++u)
                if (base + u * step < count) yr[base + u * step] = scale(xv[u], wv[u], inv_rms);
        }
        cluster.barrier_wait();
    }
#endif
}

/// Blocks for a grid that walks the rows: at most what fills every SM, never more than the work.
inline int grid_for(int64_t row_groups, int block, int sms) {
    const int per_sm = kThreadsPerSm / block > 0 ? kThreadsPerSm / block : 1;
    int64_t resident = static_cast<int64_t>(sms) * per_sm;
    if (resident > kMaxGridX) resident = kMaxGridX;
    return static_cast<int>(row_groups < resident ? row_groups : resident);
}

template <typename T, int VEC, int G, int ITERS>
cudaError_t launch_rows(const T* x, int64_t xs, const T* w, T* y, int64_t ys, int64_t rows, int cols, float eps,
                        int sms, cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    const int64_t groups = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    rmsnorm_rows_kernel<T, VEC, G, ITERS, kBlock>
        <<<grid_for(groups, kBlock, sms), kBlock, 0, stream>>>(x, xs, w, y, ys, rows, cols, eps);
    return cudaGetLastError();
}

template <typename T, int VEC>
cudaError_t launch_cluster(const T* x, int64_t xs, const T* w, T* y, int64_t ys, int64_t rows, int cols, float eps,
                           cudaStream_t stream) {
    using P = Pack<T, VEC>;
    const int nvec = cols / VEC;

    auto kernel = rmsnorm_cluster_kernel<T, VEC, kClusterBlock>;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[1];

    /// [cluster-size]
    // The smallest power-of-two cluster whose blocks each keep at most 64 KB of the row:
    // fp16/bf16 65536 cols → 2 blocks, 131072 → 4, 262144 → 8; up to 32768 cols (a 64 KB
    // row at VEC 1) a "cluster" of one block. A 1 MB fp32 row asks for 16 blocks, which
    // needs the non-portable opt-in and a GPC that can host them; without that it takes
    // 8 blocks of 128 KB (one per SM, slower but correct).
    const int64_t row_bytes = static_cast<int64_t>(cols) * static_cast<int64_t>(sizeof(T));
    int cluster = 1;
    while (cluster < kMaxCluster && row_bytes > cluster * kSliceTargetBytes) cluster *= 2;
    if (cluster > kMaxPortableCluster) {
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster);
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.gridDim = dim3(static_cast<unsigned>(cluster));  // the query wants a whole cluster
        config.blockDim = dim3(kClusterBlock);
        config.dynamicSmemBytes = static_cast<size_t>((nvec + cluster - 1) / cluster) * sizeof(P);
        config.attrs = attribute;
        config.numAttrs = 1;
        config.stream = stream;
        int fits = 0;
        cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (err == cudaSuccess)
            err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(config.dynamicSmemBytes));
        if (err == cudaSuccess) err = cudaOccupancyMaxActiveClusters(&fits, kernel, &config);
        if (err != cudaSuccess) (void)cudaGetLastError();  // a refused opt-in is not the launch's error
        if (err != cudaSuccess || fits < 1) cluster = kMaxPortableCluster;
    }
    const int slice_vecs = (nvec + cluster - 1) / cluster;
    /// [cluster-size]

    const size_t smem = static_cast<size_t>(slice_vecs) * sizeof(P);
    if (smem > 48 * 1024) {
        // Above 48 KB of dynamic shared memory a kernel has to opt in.
        const cudaError_t err =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        if (err != cudaSuccess) return err;
    }

    // One cluster per row; a grid.x limit only matters for absurd row counts, and then
    // clusters walk the rows. grid.x stays a multiple of the cluster size, as it must.
    int64_t clusters = rows;
    if (clusters > kMaxGridX / cluster) clusters = kMaxGridX / cluster;

    /// [cluster-launch]
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;

    config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
    config.blockDim = dim3(kClusterBlock);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, x, xs, w, y, ys, rows, cols, slice_vecs, eps);
    /// [cluster-launch]
}

/// Register kernel while one block's registers hold the row, cluster kernel beyond.
template <typename T, int VEC>
cudaError_t launch_width(const T* x, int64_t xs, const T* w, T* y, int64_t ys, int64_t rows, int cols, float eps,
                         int sms, cudaStream_t stream) {
    const int nvec = cols / VEC;
    if (nvec <= 16) return launch_rows<T, VEC, 4, 4>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 32) return launch_rows<T, VEC, 8, 4>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 64) return launch_rows<T, VEC, 16, 4>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 128) return launch_rows<T, VEC, 32, 4>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 256) return launch_rows<T, VEC, 32, 8>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 512) return launch_rows<T, VEC, 128, 4>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 1024) return launch_rows<T, VEC, 128, 8>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= 2048) return launch_rows<T, VEC, 256, 8>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    if (nvec <= kRegisterRowVecs) return launch_rows<T, VEC, 512, 8>(x, xs, w, y, ys, rows, cols, eps, sms, stream);
    return launch_cluster<T, VEC>(x, xs, w, y, ys, rows, cols, eps, stream);
}

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

/**
 * @brief RMSNorm of a rows × cols matrix with strided rows, cols up to 262144, each
 *        long row kept on chip by a thread-block cluster.
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
 * @param[in]  cols          elements per row, 1 to 262144
 * @param[in]  eps           added to the mean square inside the square root
 * @param[in]  stream        the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for a
 *         negative rows or cols outside 1..262144; cudaErrorNotSupported below sm_90
 *
 * Performance: every byte of x is read from HBM once and every byte of y written once,
 * whatever the row length: rows past 64 KB live in the shared memory of a cluster's
 * blocks (2, 4 or 8 of them, 64 KB each for fp16/bf16) between the sum and the scaling,
 * instead of being read a second time. With 16-byte accesses, 256 threads of 16 vectors
 * each, 4 accesses in flight per thread and three cluster blocks resident per SM (while
 * one waits at a barrier the others load or write), fp16/bf16 rows of 65536, 131072 and
 * 262144 cols measured 98%, 96% and 94% of the device-to-device copy bandwidth on an
 * H100. The cost of a cluster is two barriers per row, a few hundred nanoseconds that
 * the other resident blocks hide; the 8-block clusters of the longest rows pay most.
 */
template <typename T>
cudaError_t rmsnorm(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride, int64_t rows,
                    int64_t cols, float eps, cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > kMaxCols) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;

    int device = 0;
    int major = 0;
    int sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    // Thread-block clusters exist from sm_90 on; the kernels are empty for older targets.
    if (major < 9) return cudaErrorNotSupported;

    // Widest width (elements) whose accesses are all aligned: it divides cols, every row
    // stride (when there is a second row) and the addresses of x, weight and y.
    int vec = 16 / static_cast<int>(sizeof(T));
    auto fits = [&](int v) {
        const int bytes = v * static_cast<int>(sizeof(T));
        return cols % v == 0 && aligned_to(x, bytes) && aligned_to(weight, bytes) && aligned_to(y, bytes) &&
               (rows == 1 || (x_row_stride % v == 0 && y_row_stride % v == 0));
    };
    while (vec > 1 && !fits(vec)) vec /= 2;

    const int n = static_cast<int>(cols);
    switch (vec) {
        case 8:
            if constexpr (sizeof(T) <= 2)
                return launch_width<T, 8>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, sms, stream);
            break;
        case 4:
            return launch_width<T, 4>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, sms, stream);
        case 2:
            return launch_width<T, 2>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, sms, stream);
        default:
            break;
    }
    return launch_width<T, 1>(x, x_row_stride, weight, y, y_row_stride, rows, n, eps, sms, stream);
}

}  // namespace workbook::lesson8
