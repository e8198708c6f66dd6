/// @file api.h
/// @brief Lesson 6's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"

namespace workbook::api {

/// Lesson 6: per-head norm inside a [tokens, heads, head_dim] tensor.
template <typename T>
using QkNormFn = cudaError_t (*)(const T* x, int64_t x_token_stride, int64_t x_head_stride, const T* weight, T* y,
                                 int64_t y_token_stride, int64_t y_head_stride, int64_t tokens, int64_t heads,
                                 int64_t head_dim, float eps, cudaStream_t stream);
struct Lesson6 {
    int version;
    QkNormFn<float> f32;
    QkNormFn<__half> f16;
    QkNormFn<__nv_bfloat16> bf16;
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson6::qk_rmsnorm)
#endif
