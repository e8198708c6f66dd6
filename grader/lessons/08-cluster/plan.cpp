/// @file plan.cpp
/// @brief Lesson 8's cases: the plain-rows plan (lessons/common/rows_plan.cu) with strided rows up to 262144 columns.
#include "lessons/common/rows_plan.h"

namespace workbook {
namespace {

/// The benchmark shapes (rows x cols, element type).
std::vector<RowsBenchSpec> bench_shapes([[maybe_unused]] bool full) {
    [[maybe_unused]] const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
    return {{4096, 65536, f16}, {2048, 131072, bf16}, {1024, 262144, f16}, {4096, 131072, bf16},
            {1024, 262144, bf16}, {512, 262144, f32}};
}

LessonPlan plan(const Submission& student, const Submission* reference, const PlanOptions& opt) {
    RowsLesson lesson;
    lesson.typed = true;
    lesson.long_rows = true;
    lesson.bench = &bench_shapes;
    return rows_plan(lesson, student, *reference, opt);
}

}  // namespace
}  // namespace workbook

WORKBOOK_REGISTER_PLAN(8, &workbook::plan)
