/**
 * @file lesson_api.h
 * @brief The table of entry points a compiled submission exports to the grader.
 *
 * A submission (an exercise, a solution, or any file given to `--source`) is compiled
 * together with a small adapter into its own shared library. The adapter includes the
 * submission and exports one C function that returns a table of pointers to the
 * lesson's entry points. The grader opens each library privately, so a submission and
 * the reference can use the same kernel and helper names without clashing.
 */
#pragma once

#include <cstdint>

#ifdef WORKBOOK_CPU_ONLY
using cudaStream_t = struct CUstream_st*;
enum cudaError_t : int {};
struct __half;
struct __nv_bfloat16;
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include "workbook/production_norm.h"
#include "workbook/rmsnorm_backward.h"

struct __nv_fp8_e4m3;  // lesson 11's q (cuda_fp8.h); only pointers to it appear here

namespace workbook::api {

/// Bumped whenever a table below changes shape; the grader refuses a mismatch.
inline constexpr int kVersion = 1;

/// Lesson 1: the CPU reference.
struct Lesson1 {
    int version;
    void (*rmsnorm)(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps);
};

/// Lessons 2 and 3: fp32, contiguous rows.
struct Lesson2 {
    int version;
    cudaError_t (*rmsnorm)(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps,
                           cudaStream_t stream);
};
using Lesson3 = Lesson2;

/// Lessons 4 and 8: strided rows, one entry per element type.
template <typename T>
using StridedFn = cudaError_t (*)(const T* x, int64_t x_row_stride, const T* weight, T* y, int64_t y_row_stride,
                                  int64_t rows, int64_t cols, float eps, cudaStream_t stream);
struct Lesson4 {
    int version;
    StridedFn<float> f32;
    StridedFn<__half> f16;
    StridedFn<__nv_bfloat16> bf16;
};
using Lesson8 = Lesson4;

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

/// Lesson 9: the production norm behind a descriptor (types in production_norm.h). One table
/// for every dtype: the types are chosen at run time, inside the descriptor.
struct Lesson9 {
    int version;
    lesson9::Status (*create)(const lesson9::NormProblem& problem, lesson9::NormDescriptor** out);
    cudaError_t (*launch)(const lesson9::NormDescriptor* desc, cudaStream_t stream);
    void (*destroy)(lesson9::NormDescriptor* desc);
};

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

/// The exported symbol is `workbook_lessonN_api`; it returns a pointer to the table above.
#define WORKBOOK_API_SYMBOL_PREFIX "workbook_lesson"

}  // namespace workbook::api
