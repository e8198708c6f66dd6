/**
 * @file rmsnorm_backward.h
 * @brief Lesson 10's contract: the RMSNorm backward pass, dx and dweight from dy, x, weight and rstd.
 *
 * The grader and every lesson 10 submission include this header, so both sides agree on the
 * entry points. A submission defines the two templates declared at the bottom; the adapter
 * instantiates them for `float`, `__half` and `__nv_bfloat16`.
 *
 * The forward pass was `y = x * rstd * weight` per row, with `rstd = 1 / sqrt(mean(x^2) + eps)`
 * saved as fp32. Given the gradient `dy` of the loss with respect to `y`, per row of `cols`
 * elements, in fp32:
 *
 *     xhat    = x * rstd                                   (rstd as saved: rstd[row])
 *     g       = dy * weight
 *     m       = sum(g * xhat) / cols                       (one reduction along the row)
 *     dx      = rstd * (g - xhat * m)                      (written in T)
 *     dweight = sum over all rows of dy * xhat             (one reduction down each column, fp32)
 *
 * Rules of the call:
 *  - T is float, __half or __nv_bfloat16: dy, x, weight and dx have type T; rstd and dweight
 *    are fp32. All arithmetic is fp32.
 *  - rows >= 0 up to what memory holds (rows * stride may pass 2^31 elements); 1 <= cols <=
 *    kMaxCols. Row r of dy, x and dx starts at r * that tensor's row stride (in elements); every
 *    stride is >= cols, and the elements between a row's end and the next row's start are not
 *    the call's: dx's are never written.
 *  - Alignment: every pointer and stride may be aligned to its element size only.
 *  - dx and dweight do not overlap each other, the inputs or the workspace.
 *  - dweight is overwritten, not accumulated into. rows = 0 writes dweight = 0 (the sum of no
 *    rows) on the stream and nothing else; it is the one lesson where rows = 0 enqueues work.
 *  - eps is not a parameter: it is inside the saved rstd, which the call uses as given (it
 *    cannot recompute it: it does not know the forward's eps).
 *  - Workspace: `workspace` is device memory of at least `rmsnorm_backward_workspace_bytes<T>(rows,
 *    cols)` bytes, 256-byte aligned (as cudaMalloc returns it), whose contents on entry are
 *    undefined; the call may use it as it likes and must not touch a byte past `workspace_bytes`.
 *    It may be null when the size asked for is 0. A `workspace_bytes` below the size asked for
 *    returns cudaErrorInvalidValue and enqueues nothing. Two calls in flight at once need two
 *    workspaces; calls in order on one stream may share one.
 *  - rmsnorm_backward_workspace_bytes is host code only: it may read the current device's
 *    attributes (its SM count) but allocates nothing, launches nothing and does not
 *    synchronise. Its answer depends only on T, rows, cols and the device.
 *  - Determinism: two calls with the same inputs on the same device write bit-identical dx and
 *    dweight. The column sum's order may depend on the shape and the device, never on which
 *    block happens to finish first (so no floating-point atomics into dweight).
 *  - The call launches on `stream` only, allocates nothing, does not synchronise, and returns
 *    the launch's error code.
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace workbook::lesson10 {

/// The longest row the contract accepts.
inline constexpr int64_t kMaxCols = 65536;

}  // namespace workbook::lesson10

#ifndef WORKBOOK_CPU_ONLY
#include <cuda_runtime.h>

namespace workbook::lesson10 {

/**
 * @brief Bytes of device scratch memory rmsnorm_backward<T> needs for `rows` × `cols` on the
 *        current device (0 when it needs none). Host only: no allocation, launch or synchronisation.
 */
template <typename T>
size_t rmsnorm_backward_workspace_bytes(int64_t rows, int64_t cols);

/**
 * @brief RMSNorm's backward pass: dx (in T) and dweight (fp32, overwritten) from dy, x, weight
 *        and the forward's rstd (fp32, one per row), launched on `stream`.
 * @return The launch's error code (not synchronised); cudaErrorInvalidValue, with nothing
 *         enqueued, when `workspace_bytes` is below rmsnorm_backward_workspace_bytes<T>(rows, cols).
 */
template <typename T>
cudaError_t rmsnorm_backward(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride, const T* weight,
                             const float* rstd, T* dx, int64_t dx_row_stride, float* dweight, void* workspace,
                             size_t workspace_bytes, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace workbook::lesson10
#endif
