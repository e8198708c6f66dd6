/// @file backward_checks.h
/// @brief Lesson 10's GPU side of the grader: the saved rstd as an input, and dx and dweight
///        against the fp64 oracle (backward_oracle.h).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "report/compare_report.h"
#include "engine/device_tensor.h"
#include "workbook/backward_oracle.h"
#include "workbook/dtype.h"

namespace workbook {

/// Writes the forward's saved rstd (fp32, one per row, saved_rstd) of `p` with activations of
/// type `dtype`; guard zones get the marker.
void fill_saved_rstd(const DeviceTensor& rstd, const BackwardProblem& p, DType dtype, cudaStream_t stream);

/// "" when the rstd input still holds exactly what fill_saved_rstd wrote, and its guards are untouched.
std::string check_saved_rstd_unchanged(const DeviceTensor& rstd, const BackwardProblem& p, DType dtype,
                                       cudaStream_t stream);

/// dx (a rows × cols tensor of `dtype`) against oracle_dx, judged by grad_x_tolerance.
CompareResult compare_dx(const BackwardProblem& p, DType dtype, const DeviceTensor& dx, cudaStream_t stream);

/// dweight (cols fp32 values) against oracle_dweight, judged by grad_weight_tolerance.
CompareResult compare_dweight(const BackwardProblem& p, DType dtype, const DeviceTensor& dweight, cudaStream_t stream);

/// The naive GPU oracle against the CPU one on a small problem; "" when they agree.
std::string self_check_backward_oracle(cudaStream_t stream);

}  // namespace workbook
