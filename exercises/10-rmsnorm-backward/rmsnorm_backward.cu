/**
 * @file rmsnorm_backward.cu
 * @brief Lesson 10 exercise: RMSNorm's backward pass, dx and dweight, for fp32, fp16 and bf16.
 *
 * This is the only file you edit for lesson 10. Build and grade it with
 *     make lesson10 && ./grade lesson10
 * and ask for a hint with `./grade lesson10 --hint` (ask again for the next one).
 *
 * The contract is the header grader/include/workbook/rmsnorm_backward.h (read it whole). In
 * short, with x̂ = x * rstd (rstd saved by the forward, fp32, one per row) and g = dy * weight,
 * per row of cols elements, in fp32:
 *     m       = sum(g * x̂) / cols
 *     dx      = rstd * (g - x̂ * m)                 (written in T)
 *     dweight = sum over all rows of dy * x̂        (fp32, cols values, overwritten)
 * T is float, __half or __nv_bfloat16. Rows are strided (stride >= cols, any alignment);
 * rows >= 0 (rows = 0: dweight = 0 and nothing else), cols 1..65536. The workspace is
 * scratch you size yourself with rmsnorm_backward_workspace_bytes; its contents on entry are
 * garbage. Two calls with the same inputs must give bit-identical results, so no
 * floating-point atomicAdd into dweight. Launch on `stream` only, allocate nothing, do not
 * synchronise, and return the launch's error code.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "workbook/rmsnorm_backward.h"

namespace workbook::lesson10 {
namespace {

template <typename T>
__global__ void rmsnorm_backward_kernel(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride,
                                        const T* weight, const float* rstd, T* dx, int64_t dx_row_stride,
                                        float* partials, int64_t rows, int64_t cols) {
    // TODO(1): give each row to a group of threads (a warp for short rows, a block for long
    //          ones) and let each group walk many rows: row = group, group + groups, ...
    //          Each thread owns the same columns in every row it visits.
    // TODO(2): load the thread's dy and x of the row (16-byte vectors where the alignment
    //          allows), then compute g = dy * w and x̂ = x * rstd[row] in fp32.
    // TODO(3): reduce sum(g * x̂) over the row's threads (warp shuffles; shared memory across
    //          warps), m = sum / cols, then write dx = rstd * (g - x̂ * m) rounded to T.
    // TODO(4): keep acc[c] += dy * x̂ for the thread's columns in registers across all the rows
    //          the group visits; at the end write them as the group's partial row of `partials`.
    (void)dy, (void)dy_row_stride, (void)x, (void)x_row_stride, (void)weight, (void)rstd, (void)dx;
    (void)dx_row_stride, (void)partials, (void)rows, (void)cols;
}

// TODO(5): a second kernel: dweight[c] = the sum of the partial rows' column c, in a fixed
//          order (no atomics), so that every run gives the same bits.

}  // namespace

template <typename T>
size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols) {
    // TODO(6): the bytes of your partial rows: (number of row groups) x cols x 4.
    (void)rows, (void)cols;
    return 0;
}

template <typename T>
cudaError_t rmsnorm_backward(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride, const T* weight,
                             const float* rstd, T* dx, int64_t dx_row_stride, float* dweight, void* workspace,
                             size_t workspace_bytes, int64_t rows, int64_t cols, cudaStream_t stream) {
    // TODO(7): rows == 0: dweight = 0 (cudaMemsetAsync on the stream), and nothing else.
    // TODO(8): a workspace_bytes below what rmsnorm_backward_workspace_bytes asks for returns
    //          cudaErrorInvalidValue without enqueueing anything.
    // TODO(9): launch the row kernel, then the column kernel, both on `stream`.
    (void)dweight, (void)workspace, (void)workspace_bytes;
    rmsnorm_backward_kernel<T><<<1, 32, 0, stream>>>(dy, dy_row_stride, x, x_row_stride, weight, rstd, dx,
                                                      dx_row_stride, nullptr, rows, cols);
    return cudaGetLastError();
}

}  // namespace workbook::lesson10
