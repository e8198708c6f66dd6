/// @file gpu_checks.h
/// @brief The grader's own GPU work: filling inputs, poisoning outputs, the fp64 oracle, write checks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "report/compare_report.h"
#include "engine/device_tensor.h"
#include "workbook/oracle.h"
#include "workbook/tolerance.h"

namespace workbook {

/// Writes the input described by `spec` into every owned element; guards and padding get the marker.
void fill_input(const DeviceTensor& t, const ValueSpec& spec, cudaStream_t stream);
/// Poisons every owned element with NaN; guards and padding get the marker.
void poison_output(const DeviceTensor& t, cudaStream_t stream);

/// Elements of `t`'s rows (not the padding between them) that still hold the poison's bits; waits for `stream`.
size_t count_poisoned(const DeviceTensor& t, cudaStream_t stream);
/// The same count, added to the device counter `*count` on `stream` without waiting (remote timing
/// enqueues it right behind the clock, so no launch can finish after the clock stopped unseen).
void count_poisoned_async(const DeviceTensor& t, unsigned long long* count, cudaStream_t stream);

/// Which output of the problem a tensor holds.
enum class OutputKind {
    normalised,         ///< y, judged by output_tolerance
    rounded_sum,        ///< residual_out: s rounded to T
    normalised_scaled,  ///< lesson 9's y (mean, bias, fp32 parameters), judged by norm_output_tolerance
    rstd,               ///< lesson 9's rstd: one fp32 value per row (the tensor's cols is 1)
    external,           ///< judged by the call's own check (GpuCall::check: lesson 11's q and scale)
};

/// Compares an output with the oracle on every row. `dtype` is the activations' type (the
/// inputs' rounding); the tensor's own dtype is how the output is stored. `extra_ulps` widens
/// the output tolerance.
CompareResult compare_output(const OracleProblem& p, DType dtype, const DeviceTensor& y, OutputKind kind,
                             int extra_ulps, cudaStream_t stream);

/// Names writes outside the owned elements (each guard zone: the nearest changed element, expected and
/// got; the padding: how many elements and the first); "" when none.
std::string check_untouched_outside(const DeviceTensor& t, const char* tensor_name, cudaStream_t stream);
/// Checks an input still holds exactly what fill_input wrote; "" when it does.
std::string check_input_unchanged(const DeviceTensor& t, const ValueSpec& spec, const char* tensor_name,
                                  cudaStream_t stream);

/// Fills every SM's shared memory with NaN so a read of a slot nobody wrote shows up.
void scribble_shared_memory(cudaStream_t stream);

/// Oracle self-check: the GPU oracle must agree with the CPU oracle; "" when it does.
std::string self_check_gpu_oracle(cudaStream_t stream);

}  // namespace workbook
