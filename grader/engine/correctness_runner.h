/// @file correctness_runner.h
/// @brief Runs a plan's cases as GoogleTest tests and collects their results.
#pragma once

#include <string>

#include "engine/case_registry.h"
#include "report/run_report.h"

namespace workbook {

/// Whether case `name` is selected by `--cases`: a comma-separated list of substrings, any of which may match
/// (`=NAME`: the case named NAME exactly).
bool case_selected(const std::string& filter, const std::string& name);

/// The detail of a case that --fail-fast left out after an earlier case failed.
inline constexpr const char* kFailFastNotRun = "not run: --fail-fast stopped at the first failing case";

/// How many of report.cases --fail-fast left out.
size_t fail_fast_not_run(const RunReport& report);

/// How run_cases goes through the plan.
struct RunOptions {
    bool small_only = false;  ///< --small: leave out the cases marked large
    /// --fail-fast: the cases run smallest first (fewest elements: argument checks, then small shapes) and
    /// the run stops at the first that fails; the rest are reported as skipped (kFailFastNotRun). A
    /// verdict needs one failing case, not all of them (mutation testing grades thousands of kernels).
    bool fail_fast = false;
};

/// Runs every case (each `repeats` times with fresh seeds derived from `seed`); fills report.cases.
/// Returns "" or, when the device became unusable, the fatal error that stopped the run.
std::string run_cases(const LessonPlan& plan, uint64_t seed, const std::string& filter, const RunOptions& options,
                      RunReport& report);

}  // namespace workbook
