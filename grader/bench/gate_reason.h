/// @file gate_reason.h
/// @brief The gate verdict's reason: the shape that failed and by how much, never a bystander's line.
#pragma once

#include <string>

#include "report/run_report.h"

namespace workbook {

/// Why the gate failed, from the benchmark rows and the lesson's own condition, most serious
/// first: wrong outputs of the timed launches, a shape that could not be timed, an impossible
/// result, the slowest shape below the gate (with its ratio and how many others are below), then
/// the lesson's own condition (lesson 7: the PDL speed-up). "" when nothing failed.
std::string gate_failure_reason(const RunReport& report);

}  // namespace workbook
