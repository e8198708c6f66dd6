/// @file lesson2.cu
/// @brief A straightforward lesson 2 kernel: what the lesson's README teaches and nothing more (one
/// warp per row, lane-strided loads, a shuffle butterfly, a grid-stride loop over rows, and the
/// `__restrict__` promise the README asks for so the output pass keeps its loads in flight). It
/// checks that the gate stays fair: scripts/straightforward-check grades it on a GPU.
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson2 {
namespace {

constexpr int kWarps = 4;  ///< warps per block

__global__ void one_warp_per_row(const float* __restrict__ x, const float* __restrict__ weight,
                                 float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    const int lane = threadIdx.x % 32;
    const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows; row += warps) {
        const float* xr = x + row * cols;
        float sum = 0.0f;
        for (int64_t c = lane; c < cols; c += 32) sum += xr[c] * xr[c];
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        const float inv_rms = rsqrtf(sum / static_cast<float>(cols) + eps);
        for (int64_t c = lane; c < cols; c += 32) y[row * cols + c] = xr[c] * inv_rms * weight[c];
    }
}

}  // namespace

cudaError_t rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                    cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    const int64_t blocks = (rows + kWarps - 1) / kWarps;
    one_warp_per_row<<<static_cast<int>(blocks < 65536 ? blocks : 65536), 32 * kWarps, 0, stream>>>(x, weight, y, rows,
                                                                                                    cols, eps);
    return cudaGetLastError();
}

}  // namespace workbook::lesson2
