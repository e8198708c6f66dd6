/// @file api.h
/// @brief Lesson 5's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"

namespace workbook::api {

/// Lesson 5: fused add-residual.
template <typename T>
using FusedAddFn = cudaError_t (*)(const T* x, const T* residual, const T* weight, T* y, T* residual_out,
                                   int64_t rows, int64_t cols, float eps, cudaStream_t stream);
struct Lesson5 {
    int version;
    FusedAddFn<float> f32;
    FusedAddFn<__half> f16;
    FusedAddFn<__nv_bfloat16> bf16;
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson5::fused_add_rmsnorm)
#endif
