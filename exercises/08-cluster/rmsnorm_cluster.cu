/**
 * @file rmsnorm_cluster.cu
 * @brief Lesson 8 exercise: RMSNorm of rows up to 262144 cols, each row split over a
 *        thread-block cluster and kept on chip.
 *
 * This is the only file you edit for lesson 8. Build and grade it with
 *     make lesson8 && ./grade lesson8
 * and ask for a hint with `./grade lesson8 --hint` (ask again for the next one).
 *
 * Contract (lesson 4's, with longer rows): y[r][c] = x[r][c] * rsqrt(mean(x[r][:]^2) + eps)
 * * weight[c] for T = float, __half and __nv_bfloat16, accumulated in fp32. Row r of x
 * starts at x + r * x_row_stride (and of y at y + r * y_row_stride); the elements between
 * a row's end and the next row are not yours: never write them. rows >= 0 (rows = 0
 * launches nothing, returns cudaSuccess), cols 1..262144, rows * stride may pass 2^31
 * elements, any pointer and any stride may be aligned to the element size only. Launch on
 * `stream` only, allocate nothing, do not synchronise, return the launch's error code.
 * Clusters need sm_90 or newer; return cudaErrorNotSupported below it.
 *
 * The goal: each byte of x read from HBM once and each byte of y written once, even for
 * a 512 KB row, at about 90% of the copy bandwidth.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson8 {
namespace {

/// fp32 view of an element.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Round-to-nearest back to the storage type.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements moved by one access of VEC * sizeof(T) bytes.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// Sum over the 32 lanes of a warp; every lane gets the total.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <typename T>
__global__ void rmsnorm_cluster_kernel(const T* x, int64_t x_row_stride, const T* weight, T* y,
                                       int64_t y_row_stride, int64_t rows, int64_t cols, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // TODO(1): find your place: cooperative_groups::this_cluster() gives the cluster;
    //          cluster.block_rank() (NOT blockIdx.x) picks this block's slice of the row,
    //          cluster.num_blocks() the number of slices; the row is blockIdx.x / num_blocks
    //          (loop over rows if the grid has fewer clusters than rows; int64_t offsets).
    // TODO(2): load the slice once, VEC-wide, into dynamic shared memory
    //          (extern __shared__), summing squares in fp32 on the way.
    // TODO(3): reduce the block's sum (warps, then shared memory) into one __shared__ float
    //          that the other blocks of the cluster will read.
    // TODO(4): cluster.sync(), then read every block's partial through
    //          cluster.map_shared_rank(&partial, rank) and add them in the same order in
    //          every block, so all agree on inv_rms = rsqrtf(total / cols + eps).
    // TODO(5): scale the slice from shared memory by inv_rms and weight and write y. Before
    //          the block exits (or reuses its partial for the next row), a second cluster
    //          barrier: a peer may still be reading this block's shared memory.
#endif
}

}  // namespace

template <typename T>
cudaError_t rmsnorm(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride, int64_t rows,
                    int64_t cols, float eps, cudaStream_t stream) {
    // TODO(6): rows == 0 returns cudaSuccess without a launch; reject cols outside
    //          1..262144 and devices below compute capability 9.0.
    // TODO(7): the vector width, as in lesson 4: 16 / sizeof(T) halved until it divides
    //          cols, both strides (when rows > 1) and the alignment of x, weight and y.
    // TODO(8): the cluster size from the row's bytes: the smallest of 1, 2, 4, 8 that keeps
    //          each block's slice within what shared memory can hold with a few blocks per
    //          SM (64 KB is a good slice). Dynamic shared memory above 48 KB needs
    //          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes).
    // TODO(9): launch with cudaLaunchKernelEx and cudaLaunchAttributeClusterDimension
    //          (clusterDim = {size, 1, 1}); gridDim.x = clusters * size, never rows on
    //          gridDim.y.
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(32);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, rmsnorm_cluster_kernel<T>, x, x_row_stride, weight, y, y_row_stride, rows,
                              cols, eps);
}

}  // namespace workbook::lesson8
