/// @file api.h
/// @brief Lesson 10's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"
#include "workbook/rmsnorm_backward.h"

namespace workbook::api {

/// Lesson 10: the backward pass (rmsnorm_backward.h), its workspace query beside each entry.
template <typename T>
using BackwardFn = cudaError_t (*)(const T* dy, int64_t dy_row_stride, const T* x, int64_t x_row_stride,
                                   const T* weight, const float* rstd, T* dx, int64_t dx_row_stride, float* dweight,
                                   void* workspace, size_t workspace_bytes, int64_t rows, int64_t cols,
                                   cudaStream_t stream);
using WorkspaceFn = size_t (*)(int64_t rows, int64_t cols);
struct Lesson10 {
    int version;
    BackwardFn<float> f32;
    BackwardFn<__half> f16;
    BackwardFn<__nv_bfloat16> bf16;
    WorkspaceFn workspace_f32;
    WorkspaceFn workspace_f16;
    WorkspaceFn workspace_bf16;
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson10::rmsnorm_backward), WORKBOOK_TYPED(workbook::lesson10::rmsnorm_backward_workspace_bytes)
#endif
