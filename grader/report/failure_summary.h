/// @file failure_summary.h
/// @brief One line per distinct failure, and a plain word when the file is still the stub.
///
/// Pure functions of the case results, so the printed summary is tested on the CPU. The JSON
/// report keeps every case; only the terminal groups them.
#pragma once

#include <string>
#include <vector>

#include "report/run_report.h"

namespace workbook {

/// Failing cases whose messages are identical, in the order the first of them failed.
struct FailureGroup {
    std::string message;
    std::vector<std::string> cases;  ///< the first is printed in full, the rest in one line
};

/// What makes two failures "the same": the message, with the numbers left out when the cause is a
/// launch or a stream (the grid of a refused launch follows the case's rows; the mistake does not).
std::string failure_key(const CaseResult& c);

/// The failures grouped by failure_key (passed and skipped cases left out).
std::vector<FailureGroup> group_failures(const std::vector<CaseResult>& cases);

/// The one line that stands for a group's other cases: "and 64 more cases with the same failure
/// as rows_zero_f32: ..."; "" for a group of one.
std::string repeated_failure_line(const FailureGroup& group);

/// "" unless the failures show the file is still the stub; otherwise the verdict's reason, which
/// starts with "still the stub:". `untouched`: the file is byte for byte the shipped exercise.
std::string stub_notice(const std::vector<CaseResult>& cases, bool untouched);

}  // namespace workbook
