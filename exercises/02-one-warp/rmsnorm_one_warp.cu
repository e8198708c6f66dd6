/**
 * @file rmsnorm_one_warp.cu
 * @brief Lesson 2 exercise: one warp per row.
 *
 * This is the only file you edit for lesson 2. Grade it with
 *     make lesson2 && ./grade lesson2
 * and ask for a hint with `./grade lesson2 --hint` (ask again for the next one).
 *
 * Contract: y[r][c] = x[r][c] * rsqrt(mean(x[r][:]^2) + eps) * weight[c], fp32,
 * rows contiguous, any rows ≥ 0 (rows = 0 launches nothing), cols 1..65536.
 * Launch on `stream` only and return the launch's error code.
 */
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson2 {
namespace {

__global__ void rmsnorm_one_warp_kernel(const float* x, const float* weight, float* y, int64_t rows, int64_t cols,
                                        float eps) {
    // TODO(1): pick this warp's row from blockIdx.x and threadIdx.x / 32.
    //          What if there are more rows than warps in the grid?
    // TODO(2): each lane sums x*x over columns lane, lane + 32, lane + 64, ...
    // TODO(3): add the 32 partial sums with __shfl_xor_sync so every lane has the total.
    // TODO(4): inv_rms = rsqrtf(sum / cols + eps); write y = x * inv_rms * weight.
}

}  // namespace

cudaError_t rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                    cudaStream_t stream) {
    // TODO(5): rows == 0 must launch nothing. Choose a grid that works for rows > 65535.
    rmsnorm_one_warp_kernel<<<1, 32, 0, stream>>>(x, weight, y, rows, cols, eps);
    return cudaGetLastError();
}

}  // namespace workbook::lesson2
