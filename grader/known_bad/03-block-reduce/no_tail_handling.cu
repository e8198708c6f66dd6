// expect: fail-correctness prime_cols
// bug: only whole multiples of the block size are processed, so the last cols % blockDim.x elements are dropped
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson3 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxWarps = 1024 / kWarpSize;

/// Sum over the 32 lanes; after the butterfly every lane holds the total.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// [block-sum]
/// Sum over the block; every thread gets the total. `partials` needs one slot per warp.
__device__ float block_sum(float v, float* partials) {
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int num_warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
    v = warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    // Only slots 0 .. num_warps-1 were written; the rest of the warp contributes zero.
    float total = lane < num_warps ? partials[lane] : 0.0f;
    total = warp_sum(total);
    // The barrier keeps the next row's writes to `partials` behind this row's reads.
    __syncthreads();
    return total;
}
/// [block-sum]

/// One block per row; blocks stride over rows so any rows count fits the grid.
__global__ void rmsnorm_block_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                     float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[kMaxWarps];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        float sum = 0.0f;
        const int64_t full = cols / blockDim.x * blockDim.x;
        for (int64_t c = threadIdx.x; c < full; c += blockDim.x) sum += xr[c] * xr[c];
        const float inv_rms = rsqrtf(block_sum(sum, partials) / static_cast<float>(cols) + eps);
        // The second read of the row mostly hits L2: the block touched it moments ago.
        for (int64_t c = threadIdx.x; c < full; c += blockDim.x) yr[c] = xr[c] * inv_rms * weight[c];
    }
}

/// [block-size]
/// Threads per block from cols: about 8 elements per thread, 64 to 1024 threads.
int threads_for(int64_t cols) {
    int threads = 64;
    while (threads < 1024 && threads * 8 < cols) threads *= 2;
    return threads;
}
/// [block-size]

}  // namespace

/**
 * @brief RMSNorm of a rows × cols fp32 matrix, one block per row.
 *
 * @param[in]  x       rows × cols input, rows contiguous
 * @param[in]  weight  cols scale factors
 * @param[out] y       rows × cols output (must not overlap x)
 * @param[in]  rows    number of rows (0 launches nothing)
 * @param[in]  cols    elements per row, 1 to 65536
 * @param[in]  eps     added to the mean square inside the square root
 * @param[in]  stream  the only stream the kernel is launched on
 * @return the launch's error code (not synchronised)
 *
 * Performance: a long row now has up to 1024 threads loading it, so rows of 4096
 * cols and more run near the copy bandwidth even with scalar loads. Short rows waste
 * most of each block; lesson 4 packs several rows into one block.
 */
cudaError_t rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                    cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    const int blocks = static_cast<int>(rows < (1 << 20) ? rows : (1 << 20));
    rmsnorm_block_kernel<<<blocks, threads_for(cols), 0, stream>>>(x, weight, y, rows, cols, eps);
    return cudaGetLastError();
}

}  // namespace workbook::lesson3
