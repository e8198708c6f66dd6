/**
 * @file production_norm.h
 * @brief Lesson 9's contract: the production norm behind one validated descriptor.
 *
 * This header is the library's public interface: the grader and every lesson 9 submission
 * include it, so both sides agree on every type. A submission defines `NormDescriptor` and the
 * three entry points declared at the bottom.
 *
 * The call, per row of `cols` elements (the last dimension), in fp32:
 *
 *     s            = x + residual                    (x alone without a residual)
 *     residual_out = s rounded to T                  (optional; needs a residual)
 *     mean         = sum(s) / cols                   (LayerNorm; 0 for RMSNorm)
 *     rstd         = 1 / sqrt(sum((s - mean)^2) / cols + eps)   (optional output, fp32)
 *     y            = (s - mean) * rstd * weight + bias           (bias optional)
 *
 * Descriptor rules (norm_create checks every one and returns the first that fails, in the
 * order of the Status values):
 *  - x is rank 2 `[rows, cols]` or rank 3 `[batch, heads, cols]`; y, residual and residual_out
 *    have x's rank and shape; weight and bias are rank 1 `[cols]`; rstd has rank x.rank - 1
 *    and x's shape without the last dimension. Every dimension is >= 0; rows = 0 (any outer
 *    dimension 0) is valid and launches nothing.
 *  - Strides are in elements. The last dimension's stride is 1 in every tensor. The others are
 *    free but must keep a tensor's rows apart: sorted by stride, each outer stride is at least
 *    the extent of the dimensions inside it (non-negative, no two rows share an element).
 *  - dtypes: x is f32, f16 or bf16 (T); y, residual and residual_out are T; weight and bias are
 *    each T or f32; rstd is f32.
 *  - 1 <= cols <= kMaxCols.
 *  - Aliasing: y may be exactly x (same data pointer and strides) and residual_out exactly
 *    residual. Apart from these two, the memory span of every output (first to last byte it
 *    may touch) must not meet the span of any other tensor; inputs may share memory freely.
 *  - eps is finite and >= 0; mode is rms or layer.
 *
 * norm_create does no device work and keeps no pointer to the problem: the descriptor holds
 * what it validated and the launch plan it chose. norm_launch launches on `stream` only and
 * returns the launch's error code, not synchronised. norm_destroy accepts nullptr.
 */
#pragma once

#include <cstdint>

namespace workbook::lesson9 {

/// The longest row the contract accepts.
inline constexpr int64_t kMaxCols = 65536;

/// Element types.
enum class DataType : int32_t { f32 = 0, f16 = 1, bf16 = 2 };

/// Which norm: RMSNorm (no mean) or LayerNorm (mean subtracted, variance about it).
enum class NormMode : int32_t { rms = 0, layer = 1 };

/// What norm_create found wrong; `success` when nothing.
enum class Status : int32_t {
    success = 0,
    missing_tensor = 1,        ///< x, weight or y has no data, residual_out is given without residual, or out is null
    bad_rank = 2,              ///< x is not rank 2 or 3, or another tensor's rank does not follow from x's
    negative_dimension = 3,    ///< a dimension below 0
    shape_mismatch = 4,        ///< a tensor's shape differs from the one x implies
    inner_stride_not_one = 5,  ///< the last dimension's stride is not 1
    overlapping_rows = 6,      ///< an outer stride is negative or too small: two rows of one tensor share memory
    unsupported_dtype = 7,     ///< a dtype outside the table (or not a DataType at all)
    cols_out_of_range = 8,     ///< cols < 1 or cols > kMaxCols
    partial_overlap = 9,       ///< an output shares memory with another tensor beyond the two exact aliases
    bad_eps = 10,              ///< eps negative, infinite or NaN
    bad_mode = 11,             ///< mode is not rms or layer
};

/// The name of a status, as the enumerator is spelled ("partial_overlap").
inline const char* status_name(Status s) {
    switch (s) {
        case Status::success: return "success";
        case Status::missing_tensor: return "missing_tensor";
        case Status::bad_rank: return "bad_rank";
        case Status::negative_dimension: return "negative_dimension";
        case Status::shape_mismatch: return "shape_mismatch";
        case Status::inner_stride_not_one: return "inner_stride_not_one";
        case Status::overlapping_rows: return "overlapping_rows";
        case Status::unsupported_dtype: return "unsupported_dtype";
        case Status::cols_out_of_range: return "cols_out_of_range";
        case Status::partial_overlap: return "partial_overlap";
        case Status::bad_eps: return "bad_eps";
        case Status::bad_mode: return "bad_mode";
    }
    return "unknown status";
}

/// One tensor: where it is, its element type, and its shape and strides (in elements).
/// An optional tensor is absent when `data` is null; its other fields are then ignored.
struct TensorDesc {
    void* data = nullptr;  ///< inputs are only read through it
    DataType dtype = DataType::f32;
    int32_t rank = 0;
    int64_t shape[3] = {0, 0, 0};   ///< the first `rank` entries; those past it are ignored
    int64_t stride[3] = {0, 0, 0};  ///< the first `rank` entries; those past it are ignored
};

/// Everything one norm call is about. residual, bias, residual_out and rstd are optional.
struct NormProblem {
    NormMode mode = NormMode::rms;
    float eps = 1e-5f;
    TensorDesc x, residual, weight, bias, y, residual_out, rstd;
};

/// The validated call and its launch plan; defined by each implementation.
struct NormDescriptor;

}  // namespace workbook::lesson9

#ifndef WORKBOOK_CPU_ONLY
#include <cuda_runtime.h>

namespace workbook::lesson9 {

/**
 * @brief Validates `problem`, chooses the launch plan, and returns it in `*out`.
 * @return Status::success and a descriptor, or the first rule `problem` breaks with `*out` set
 *         to nullptr (when `out` is not null). Does no device work.
 */
Status norm_create(const NormProblem& problem, NormDescriptor** out);

/// @brief Launches the described call on `stream`; returns the launch's error code.
cudaError_t norm_launch(const NormDescriptor* desc, cudaStream_t stream);

/// @brief Frees a descriptor (nullptr is accepted).
void norm_destroy(NormDescriptor* desc);

}  // namespace workbook::lesson9
#endif
