/// @file rows_api.h
/// @brief The two table shapes that several lessons share: fp32 contiguous rows (lessons 2, 3) and
///        strided rows of every element type (lessons 4, 8). A lesson names its table in its own api.h.
#pragma once

#include "workbook/lesson_api.h"

namespace workbook::api {

/// One fp32 entry point over contiguous rows.
struct RowsTable {
    int version;
    cudaError_t (*rmsnorm)(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                           cudaStream_t stream);
};

/// Strided rows, one entry per element type.
template <typename T>
using StridedFn = cudaError_t (*)(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride,
                                  int64_t rows, int64_t cols, float eps, cudaStream_t stream);
struct StridedTable {
    int version;
    StridedFn<float> f32;
    StridedFn<__half> f16;
    StridedFn<__nv_bfloat16> bf16;
};

}  // namespace workbook::api
