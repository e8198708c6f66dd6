/// @file correctness_runner.h
/// @brief Runs a plan's cases as GoogleTest tests and collects their results.
#pragma once

#include <string>

#include "engine/case_registry.h"
#include "report/run_report.h"

namespace workbook {

/// Runs every case (each `repeats` times with fresh seeds derived from `seed`); fills report.cases.
/// Returns "" or, when the device became unusable, the fatal error that stopped the run.
/// Whether case `name` is selected by `--cases`: a comma-separated list of substrings, any of which may match.
bool case_selected(const std::string& filter, const std::string& name);

std::string run_cases(const LessonPlan& plan, uint64_t seed, const std::string& filter, bool small_only,
                      RunReport& report);

}  // namespace workbook
