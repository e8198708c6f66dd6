/// @file bench_runner.h
/// @brief Times student and reference with Google Benchmark and applies the gate.
#pragma once

#include "engine/case_registry.h"
#include "report/run_report.h"

namespace workbook {

/// Times every shape of the plan (`samples` cold samples per kernel, interleaved), checks the
/// timed outputs, fills report.bench and returns the exit code the gate implies.
ExitCode run_bench(LessonPlan& plan, int samples, RunReport& report);

}  // namespace workbook
