/**
 * @file rmsnorm_fp8.h
 * @brief Lesson 11's contract: RMSNorm fused with dynamic per-token FP8 (e4m3) quantisation.
 *
 * The grader and every lesson 11 submission include this header, so both sides agree on the
 * entry point. Per row r of `cols` elements, in fp32:
 *
 *     rstd     = 1 / sqrt(sum(x[r][:]^2) / cols + eps)
 *     y[c]     = x[r][c] * rstd * weight[c]                 (never rounded to T)
 *     amax     = min(max_c |y[c]|, clip)
 *     scale[r] = amax / 448                                 (fp32, one per row)
 *     q[r][c]  = e4m3(y[c] / scale[r])                      (round to nearest even, saturate to ±448)
 *
 * so that q[r][c] · scale[r] ≈ y[c]: the pair an FP8 GEMM takes as its activation operand and its
 * per-row scale. 448 is e4m3's largest finite value (kE4m3Max).
 *
 * Rules of the contract:
 *  - T is float, __half or __nv_bfloat16 (x and weight); q is __nv_fp8_e4m3 (the "fn" format: no
 *    infinity, NaN is 0x7f / 0xff); scale is float. Accumulate in fp32.
 *  - Saturation: the conversion saturates (cvt.rn.satfinite, __NV_SATFINITE). With clip below
 *    max|y|, every |y| > clip quantises to ±448; even without a clip, the element that set the amax
 *    can reach 448·(1 + 2^-23) after fp32 rounding, which a non-saturating conversion may turn into NaN.
 *  - An all-zero row gives scale = 0 and q = 0 (every byte +0 or −0), not NaN: y / scale would be
 *    0 / 0, so the division must be guarded. q · scale is 0, as y is.
 *  - A row holding a NaN (in x) dequantises to NaN: its scale is NaN, or every q of the row is NaN
 *    (either makes every q · scale NaN). A max that skips NaNs (fmaxf) and then quantises the row to
 *    finite values hides the NaN and is wrong. Other rows are untouched by it.
 *  - Sizes: rows >= 0 up to what memory holds (rows · stride may pass 2^31 elements); 1 <= cols
 *    <= kMaxCols; rows = 0 returns cudaSuccess and launches nothing.
 *  - Strides, in elements: row r of x starts at x + r · x_row_stride, row r of q at
 *    q + r · q_row_stride, both >= cols when rows > 1; scale is contiguous. Bytes between a row's
 *    end and the next row's start are never written.
 *  - Alignment: every pointer and stride may be aligned only to its element size (q and its stride
 *    to one byte); a kernel's vector width must follow the alignment actually present.
 *  - Invalid calls return cudaErrorInvalidValue and launch nothing: rows < 0, cols outside
 *    1..kMaxCols, a row stride below cols (when rows > 1), a null x, weight, q or scale (when
 *    rows > 0), eps negative or NaN, clip not above 0 (NaN included). clip = +infinity is valid and
 *    means no clip.
 *  - The entry point launches on `stream` only, allocates nothing, does not synchronise, and
 *    returns the launch's error code.
 *
 * Accuracy (grader/include/workbook/tolerance.h, fp8_accepts): scale within a few fp32 ulps plus
 * the sum's drift of the fp64 oracle's; q equal to the oracle's e4m3 rounding of the exact
 * quotient, or one e4m3 step away where that quotient lies within the scale's own rounding error
 * of a rounding boundary.
 */
#pragma once

#include <cstdint>

namespace workbook::lesson11 {

/// The longest row the contract accepts.
inline constexpr int64_t kMaxCols = 65536;
/// e4m3's largest finite value: the amax of every row quantises to ±448.
inline constexpr float kE4m3Max = 448.0f;

}  // namespace workbook::lesson11

#ifndef WORKBOOK_CPU_ONLY
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace workbook::lesson11 {

/**
 * @brief RMSNorm of each row, quantised per row to FP8 e4m3 with its own scale.
 *
 * @tparam T element type of x and weight: `float`, `__half` or `__nv_bfloat16`
 * @param[in]  x             input; row r starts at x + r · x_row_stride
 * @param[in]  x_row_stride  elements between consecutive rows of x (>= cols when rows > 1)
 * @param[in]  weight        cols factors
 * @param[out] q             e4m3 output; row r starts at q + r · q_row_stride
 * @param[in]  q_row_stride  elements (bytes) between consecutive rows of q (>= cols when rows > 1)
 * @param[out] scale         rows fp32 scales: q[r][c] · scale[r] ≈ y[r][c]
 * @param[in]  rows          number of rows; 0 launches nothing
 * @param[in]  cols          elements per row, 1 to kMaxCols
 * @param[in]  eps           added to the mean square inside the square root (>= 0)
 * @param[in]  clip          largest |y| the scale represents (> 0; +infinity: no clip)
 * @param[in]  stream        the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for an invalid call
 */
template <typename T>
cudaError_t rmsnorm_fp8_quant(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                              int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps, float clip,
                              cudaStream_t stream);

}  // namespace workbook::lesson11
#endif
