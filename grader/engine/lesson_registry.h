/// @file lesson_registry.h
/// @brief Where lessons make themselves known: each lesson's manifest (lessons/NN-slug/lesson.json,
///        turned into C++ at build time) and each lesson's case plan register here, so no table or
///        switch in the grader names a lesson.
#pragma once

#include <cstdint>

#include "engine/case_registry.h"

namespace workbook {

/// Static facts about a lesson, from its manifest.
struct LessonInfo {
    int number;
    const char* slug;
    bool needs_gpu;
    int min_sm;  ///< compute capability (major*10+minor) the lesson needs; 0 for any
    double gate_fraction;
    bool emulated;  ///< graded on the CPU emulator where there is no GPU
};

/// Options that change what a plan contains.
struct PlanOptions {
    bool full_bench = false;  ///< every shape of the seed table, not only the gate's shapes
    /// Where non-zero (the CPU emulator), benchmark shapes checked as cases keep their cols but
    /// get fewer rows, so that rows x cols stays near this many elements.
    int64_t max_checked_bench_elements = 0;
    /// The CPU emulator: a lesson may run a smaller form of a case it cannot run whole in
    /// reasonable time, one that keeps the case's point and says so in its description.
    bool cpu_emulator = false;
    /// The CPU emulator runs a large call on a sample of its blocks where the engine's own checks
    /// judge it (grader/app/emulated_sampling.h): benchmark shapes checked as cases keep their rows
    /// there, and max_checked_bench_elements applies only to calls with checks of their own.
    bool sampled_calls = false;
};

/// Builds a lesson's plan; `reference` is null only for lessons that need no GPU.
using PlanBuilder = LessonPlan (*)(const Submission& student, const Submission* reference, const PlanOptions& opt);

/// Records a lesson's manifest (called from the code generated from lessons/*/lesson.json).
bool register_lesson_info(const LessonInfo& info);
/// Records a lesson's plan builder (WORKBOOK_REGISTER_PLAN, next to the plan).
bool register_plan(int lesson, PlanBuilder build);

/// The lesson's manifest; nullptr for a number no manifest declares.
const LessonInfo* find_lesson(int number);
/// Whether this build holds a plan for the lesson.
bool has_plan(int lesson);
/// The lesson's plan for `student` against `reference`; throws when this build has none.
LessonPlan make_plan(int lesson, const Submission& student, const Submission* reference, const PlanOptions& opt);

}  // namespace workbook

/// Registers `builder` (a PlanBuilder, or a captureless lambda of that shape) as lesson `n`'s plan.
#define WORKBOOK_REGISTER_PLAN(n, ...)                                                                   \
    namespace {                                                                                          \
    [[maybe_unused]] const bool workbook_plan_registered_##n = ::workbook::register_plan(n, __VA_ARGS__); \
    }
