/**
 * @file rmsnorm_vectorized.cu
 * @brief Lesson 4 exercise: vectorized RMSNorm for fp32, fp16 and bf16, strided rows, any alignment.
 *
 * This is the only file you edit for lesson 4. Build and grade it with
 *     make lesson4 && ./grade lesson4
 * and ask for a hint with `./grade lesson4 --hint` (ask again for the next one).
 *
 * Contract: y[r][c] = x[r][c] * rsqrt(mean(x[r][:]^2) + eps) * weight[c] for T = float,
 * __half and __nv_bfloat16, accumulated in fp32. Row r of x starts at x + r * x_row_stride
 * (and of y at y + r * y_row_stride); the elements between a row's end and the next row
 * are not yours: never write them. rows >= 0 (rows = 0 launches nothing, returns
 * cudaSuccess), cols 1..65536, rows * stride may pass 2^31 elements. Any pointer and any
 * stride may be aligned to the element size only. Launch on `stream` only, allocate
 * nothing, do not synchronise, and return the launch's error code.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson4 {
namespace {

// TODO(1): write the helpers you will need: fp32 from T and T from fp32 (__half2float,
//          __bfloat162float, __float2half_rn, __float2bfloat16_rn), and a way to move VEC
//          elements as one access, e.g. `template <typename T, int VEC> struct alignas(sizeof(T) * VEC)
//          Pack { T v[VEC]; };` which the compiler loads with one 2-, 4-, 8- or 16-byte instruction.

template <typename T>
__global__ void rmsnorm_vectorized_kernel(const T* x, int64_t x_row_stride, const T* weight, T* y,
                                          int64_t y_row_stride, int64_t rows, int64_t cols, float eps) {
    // TODO(2): decide which row this thread group owns. Short rows should share a warp
    //          (a few lanes per row, many rows per block); long rows a whole block. Loop
    //          over rows if the grid is smaller than the row count. Use int64_t offsets:
    //          row * x_row_stride can pass 2^31.
    // TODO(3): load the row as VEC-wide vectors, all loads before any use, and keep them
    //          in registers; accumulate x*x in fp32 (never in T).
    // TODO(4): reduce the sum across the threads that share the row (__shfl_xor_sync with
    //          offsets below the group size; shared memory across warps for a whole block).
    // TODO(5): inv_rms = rsqrt(sum / cols + eps); write y = x * inv_rms * weight with the
    //          same vector width, touching only the row's cols elements.
}

}  // namespace

template <typename T>
cudaError_t rmsnorm(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride, int64_t rows,
                    int64_t cols, float eps, cudaStream_t stream) {
    // TODO(6): rows == 0 returns cudaSuccess without a launch.
    // TODO(7): pick the vector width: start at 16 / sizeof(T) elements and halve it until
    //          it divides cols, both row strides (when rows > 1), and the addresses of x,
    //          weight and y are multiples of width * sizeof(T). Dispatch to a kernel
    //          instantiated for that width (1, 2, 4 or 8).
    // TODO(8): choose threads per row and rows per block from cols / width, and the grid
    //          from rows.
    rmsnorm_vectorized_kernel<T><<<1, 32, 0, stream>>>(x, x_row_stride, weight, y, y_row_stride, rows, cols, eps);
    return cudaGetLastError();
}

}  // namespace workbook::lesson4
