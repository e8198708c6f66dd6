/// @file gpu_checks.h
/// @brief The grader's own GPU work: filling inputs, poisoning outputs, the fp64 oracle, write checks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "device_tensor.h"
#include "workbook/oracle.h"
#include "workbook/tolerance.h"

namespace workbook {

/// Writes the input described by `spec` into every owned element; guards and padding get the marker.
void fill_input(const DeviceTensor& t, const ValueSpec& spec, cudaStream_t stream);
/// Poisons every owned element with NaN; guards and padding get the marker.
void poison_output(const DeviceTensor& t, cudaStream_t stream);

/// Which output of the problem a tensor holds.
enum class OutputKind { normalised, rounded_sum };

/// Result of comparing one output tensor with the oracle.
struct CompareResult {
    uint64_t bad = 0;        ///< elements outside the tolerance
    uint64_t unwritten = 0;  ///< of those, still holding the poison
    int64_t first_row = -1, first_col = -1;
    double expected = 0, got = 0;
    bool first_unwritten = false;
    Tolerance tol{};
};

/// Compares `y` with the oracle on every row. `extra_ulps` widens the output tolerance.
CompareResult compare_output(const OracleProblem& p, DType dtype, const DeviceTensor& y, OutputKind kind,
                             int extra_ulps, cudaStream_t stream);

/// Counts bytes changed outside the owned elements (guard zones and padding); "" when none.
std::string check_untouched_outside(const DeviceTensor& t, const char* tensor_name, cudaStream_t stream);
/// Checks an input still holds exactly what fill_input wrote; "" when it does.
std::string check_input_unchanged(const DeviceTensor& t, const ValueSpec& spec, const char* tensor_name,
                                  cudaStream_t stream);

/// Fills every SM's shared memory with NaN so a read of a slot nobody wrote shows up.
void scribble_shared_memory(cudaStream_t stream);

/// Formats a compare failure: row, column, expected, got, tolerance, whether it was written.
std::string describe_failure(const CompareResult& r, const char* tensor_name);

/// Oracle self-check: the GPU oracle must agree with the CPU oracle; "" when it does.
std::string self_check_gpu_oracle(cudaStream_t stream);

}  // namespace workbook
