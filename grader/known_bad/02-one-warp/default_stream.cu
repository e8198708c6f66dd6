// expect: fail-correctness grader's stream
// bug: the kernel is launched on the legacy default stream instead of the stream it is given
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson2 {
namespace {

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = 8;

/// [warp-butterfly]
/// Sum over the 32 lanes; after the butterfly every lane holds the total.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
/// [warp-butterfly]

/// One warp owns one row at a time; warps stride over rows so the grid size is free.
__global__ void rmsnorm_one_warp_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                        float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    const int lane = threadIdx.x % kWarpSize;
    const int64_t warps_in_grid = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < rows;
         row += warps_in_grid) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        /// [lane-strided-sum]
        // Lane l reads l, l+32, l+64, ...: each warp-wide load touches 128 contiguous bytes.
        float sum = 0.0f;
        for (int64_t c = lane; c < cols; c += kWarpSize) sum += xr[c] * xr[c];
        sum = warp_sum(sum);
        /// [lane-strided-sum]
        const float inv_rms = rsqrtf(sum / static_cast<float>(cols) + eps);
        for (int64_t c = lane; c < cols; c += kWarpSize) yr[c] = xr[c] * inv_rms * weight[c];
    }
}

}  // namespace

/**
 * @brief RMSNorm of a rows × cols fp32 matrix, one warp per row.
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
 * Performance: good while a row is short enough that 32 lanes keep enough bytes in
 * flight (up to a few thousand cols). Longer rows leave most of the SM idle per
 * row, which is why lesson 3 gives a whole block to a row.
 */
cudaError_t rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                    cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    /// [launch]
    // Enough blocks to fill every SM several times; the row loop covers the rest.
    const int64_t blocks_needed = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    const int blocks = static_cast<int>(blocks_needed < 65536 ? blocks_needed : 65536);
    rmsnorm_one_warp_kernel<<<blocks, kWarpsPerBlock * kWarpSize>>>(x, weight, y, rows, cols, eps);
    /// [launch]
    return cudaGetLastError();
}

}  // namespace workbook::lesson2
