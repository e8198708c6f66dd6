/// @file api.h
/// @brief Lesson 7's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"

namespace workbook::api {

/// Lesson 7: programmatic dependent launch.
template <typename T>
using PdlFn = cudaError_t (*)(const T* x, const T* weight, T* y, int64_t rows, int64_t cols, float eps, bool use_pdl,
                              cudaStream_t stream);
struct Lesson7 {
    int version;
    PdlFn<float> f32;
    PdlFn<__half> f16;
    PdlFn<__nv_bfloat16> bf16;
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson7::rmsnorm)
#endif
