/// @file api.h
/// @brief Lesson 11's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"

struct __nv_fp8_e4m3;  // q's element type (cuda_fp8.h); only pointers to it appear here

namespace workbook::api {

/// Lesson 11: RMSNorm fused with per-row FP8 quantisation (contract in rmsnorm_fp8.h).
template <typename T>
using Fp8QuantFn = cudaError_t (*)(const T* x, int64_t x_row_stride, const T* weight, __nv_fp8_e4m3* q,
                                   int64_t q_row_stride, float* scale, int64_t rows, int64_t cols, float eps,
                                   float clip, cudaStream_t stream);
struct Lesson11 {
    int version;
    Fp8QuantFn<float> f32;
    Fp8QuantFn<__half> f16;
    Fp8QuantFn<__nv_bfloat16> bf16;
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson11::rmsnorm_fp8_quant)
#endif
