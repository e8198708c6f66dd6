/// @file compare_report.h
/// @brief How a comparison with the oracle is summarised and reported, on the CPU and the GPU alike.
#pragma once

#include <cstdint>
#include <string>

#include "workbook/tolerance.h"

namespace workbook {

/// Result of comparing one output tensor with the oracle.
struct CompareResult {
    uint64_t bad = 0;        ///< elements outside the tolerance
    uint64_t unwritten = 0;  ///< of those, still holding the poison's exact bits
    uint64_t nan = 0;        ///< of those, a NaN the kernel wrote (not the poison)
    uint64_t total = 0;      ///< elements compared
    int64_t first_row = -1, first_col = -1;
    double expected = 0, got = 0;
    bool first_unwritten = false;
    Tolerance tol{};
};

/// Formats a compare failure: row, column, expected, got, tolerance, whether it was written (a NaN
/// the kernel wrote is named as such, never as unwritten).
std::string describe_failure(const CompareResult& r, const char* tensor_name);

}  // namespace workbook
