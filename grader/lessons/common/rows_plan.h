/// @file rows_plan.h
/// @brief The case plan shared by the lessons whose entry point normalises plain rows (2, 3, 4 and 8):
///        each of those lessons registers it from its own folder with what sets it apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/lesson_registry.h"
#include "lessons/common/plan_helpers.h"
#include "workbook/dtype.h"

namespace workbook {

/// One benchmark shape.
struct RowsBenchSpec {
    int64_t rows, cols;
    DType dtype;
};

/// One row case. Strides and misalignment are only used by lessons that allow them.
struct RowsCase {
    std::string name;
    std::string what;
    int64_t rows, cols;
    InputKind kind = InputKind::normal;
    int64_t x_pad = 0, y_pad = 0;          ///< row stride = cols + pad
    int64_t x_mis = 0, w_mis = 0, y_mis = 0;  ///< elements past an aligned address
    float eps = 1e-5f;
    int repeats = 2;
    bool strided_only = false;  ///< needs strides or misalignment (lessons 4 and 8)
    bool f16_only = false;
    int64_t min_max_cols = 0;   ///< run only where the lesson accepts cols this large
    bool repeat_call = false;   ///< called twice at the same addresses, new inputs in between
    bool untyped_only = false;  ///< lessons 2 and 3 only (fp32 kernels whose grids are capped high)
};

/// What sets one plain-rows lesson apart.
struct RowsLesson {
    /// Its table is api::StridedTable (every element type, strides, misalignment); else api::RowsTable (fp32).
    bool typed = false;
    /// Rows up to 262144 columns, longer than one block holds.
    bool long_rows = false;
    /// Its benchmark shapes: the gate's, or (`full`) the whole seed table.
    std::vector<RowsBenchSpec> (*bench)(bool full) = nullptr;
    /// Cases of this lesson only, run after the shared ones (null: none).
    std::vector<RowsCase> (*own_cases)() = nullptr;
};

/// The lesson's cases and benchmark shapes.
LessonPlan rows_plan(const RowsLesson& lesson, const Submission& student, const Submission& reference,
                     const PlanOptions& opt);

}  // namespace workbook
