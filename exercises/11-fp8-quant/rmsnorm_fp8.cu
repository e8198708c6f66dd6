/**
 * @file rmsnorm_fp8.cu
 * @brief Lesson 11 exercise: RMSNorm fused with dynamic per-row FP8 (e4m3) quantisation.
 *
 * This is the only file you edit for lesson 11. Build and grade it with
 *     make lesson11 && ./grade lesson11
 * and ask for a hint with `./grade lesson11 --hint` (ask again for the next one).
 *
 * Contract (grader/include/workbook/rmsnorm_fp8.h has every rule): per row r, in fp32,
 *     rstd     = rsqrt(mean(x[r][:]^2) + eps)
 *     y[c]     = x[r][c] * rstd * weight[c]
 *     scale[r] = min(max_c |y[c]|, clip) / 448
 *     q[r][c]  = e4m3(y[c] / scale[r]), rounded to nearest even and saturated to ±448
 * for T = float, __half and __nv_bfloat16. An all-zero row gives scale 0 and q 0 (no 0/0); a
 * row holding a NaN dequantises to NaN (scale NaN, or every q NaN). Row r of x starts at
 * x + r * x_row_stride, row r of q at q + r * q_row_stride; the bytes between a row's end and
 * the next row are not yours. rows >= 0 (0 launches nothing), cols 1..65536, rows * stride may
 * pass 2^31. Pointers and strides may be aligned to their element size only (q: one byte).
 * Invalid calls (rows < 0, cols out of range, a stride below cols, a null pointer, eps < 0 or
 * NaN, clip not > 0) return cudaErrorInvalidValue and launch nothing. Launch on `stream` only,
 * allocate nothing, do not synchronise, and return the launch's error code.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "workbook/rmsnorm_fp8.h"

namespace workbook::lesson11 {
namespace {

// TODO(1): helpers: fp32 from T (__half2float, __bfloat162float), a Pack<T, VEC> that moves
//          VEC elements as one access (lesson 4), and the e4m3 conversion:
//          __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3) rounds two
//          floats to nearest even and saturates; the low byte holds a.

template <typename T>
__global__ void rmsnorm_fp8_kernel(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                                   int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps,
                                   float clip) {
    // TODO(2): one row per thread group (a few lanes for short rows, a block for long ones);
    //          64-bit offsets: row * x_row_stride can pass 2^31.
    // TODO(3): the first time on chip: load the row (wide loads, all before any use) and keep
    //          it in registers. Accumulate sum(x^2) and max|x * weight| in fp32.
    // TODO(4): reduce both across the row's threads. rstd = 1 / sqrt(sum / cols + eps);
    //          max|y| = rstd * max|x * weight|; amax = min(max|y|, clip) without losing a NaN;
    //          scale = amax / 448, written once per row.
    // TODO(5): the second time: q = e4m3(x * weight * rstd * 448 / amax) from the same
    //          registers, saturating; an all-zero row (amax 0) gives q = 0, not 0/0.
}

}  // namespace

template <typename T>
cudaError_t rmsnorm_fp8_quant(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                              int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps, float clip,
                              cudaStream_t stream) {
    // TODO(6): invalid calls return cudaErrorInvalidValue before any launch; rows == 0 returns
    //          cudaSuccess without a launch.
    // TODO(7): the vector width: 16 / sizeof(T) elements, halved until it divides cols and both
    //          strides (when rows > 1) and x, weight (w * sizeof(T) bytes) and q (w bytes) are
    //          aligned to it. Dispatch to a kernel instantiated for that width.
    // TODO(8): threads per row and rows per block from cols / width, the grid from rows.
    rmsnorm_fp8_kernel<T><<<1, 32, 0, stream>>>(x, x_row_stride, weight, q, q_row_stride, scale, rows, cols, eps,
                                                clip);
    return cudaGetLastError();
}

}  // namespace workbook::lesson11
