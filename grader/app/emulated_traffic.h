/// @file emulated_traffic.h
/// @brief The traffic report of the emulated grader (docs/emulator.md, "Traffic"): each benchmark
///        shape's call, the student's and the reference's, run once on sampled blocks with the
///        emulator's traffic recorder on; the figures go to a JSON file that `./grade` turns into
///        the table and the gate verdict predicted on the CPU (grader/cli/workbook/traffic.py).
#pragma once

#include <string>

#include "engine/case_registry.h"

namespace workbook::emulated {

/// Records every benchmark shape of `plan` and writes the figures to `path`; "" or why it could not.
std::string write_traffic(const LessonPlan& plan, int lesson, double gate_fraction, const std::string& path);

}  // namespace workbook::emulated
