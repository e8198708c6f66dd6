/// @file plan.cpp
/// @brief Lesson 3's cases: the plain-rows plan (lessons/common/rows_plan.cu) with fp32 contiguous rows.
#include "lessons/common/rows_plan.h"

namespace workbook {
namespace {

/// The benchmark shapes (rows x cols, element type).
std::vector<RowsBenchSpec> bench_shapes([[maybe_unused]] bool full) {
    [[maybe_unused]] const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
    return {{32768, 1024, f32}, {16384, 4096, f32}, {4096, 16384, f32}, {1024, 65536, f32}};
}

LessonPlan plan(const Submission& student, const Submission* reference, const PlanOptions& opt) {
    RowsLesson lesson;
    lesson.typed = false;
    lesson.long_rows = false;
    lesson.bench = &bench_shapes;
    return rows_plan(lesson, student, *reference, opt);
}

}  // namespace
}  // namespace workbook

WORKBOOK_REGISTER_PLAN(3, &workbook::plan)
