/// @file rows_plan.h
/// @brief The case plan shared by the lessons whose entry point normalises plain rows (2, 3, 4 and 8):
///        each of those lessons registers it from its own folder with what sets it apart.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/lesson_registry.h"
#include "workbook/dtype.h"

namespace workbook {

/// One benchmark shape.
struct RowsBenchSpec {
    int64_t rows, cols;
    DType dtype;
};

/// What sets one plain-rows lesson apart.
struct RowsLesson {
    /// Its table is api::StridedTable (every element type, strides, misalignment); else api::RowsTable (fp32).
    bool typed = false;
    /// Rows up to 262144 columns, longer than one block holds.
    bool long_rows = false;
    /// Its benchmark shapes: the gate's, or (`full`) the whole seed table.
    std::vector<RowsBenchSpec> (*bench)(bool full) = nullptr;
};

/// The lesson's cases and benchmark shapes.
LessonPlan rows_plan(const RowsLesson& lesson, const Submission& student, const Submission& reference,
                     const PlanOptions& opt);

}  // namespace workbook
