/**
 * @file lesson_api.h
 * @brief What every lesson's table of entry points shares: its version and the exported symbol.
 *
 * Each lesson's own table is declared in its folder, `grader/lessons/NN-slug/api.h`.
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

namespace workbook::api {

/// Bumped whenever a lesson's table changes shape; the grader refuses a mismatch.
inline constexpr int kVersion = 1;

/// The exported symbol is `workbook_lessonN_api`; it returns a pointer to the lesson's table.
#define WORKBOOK_API_SYMBOL_PREFIX "workbook_lesson"

}  // namespace workbook::api
