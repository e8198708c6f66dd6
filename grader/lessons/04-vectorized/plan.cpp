/// @file plan.cpp
/// @brief Lesson 4's cases: the plain-rows plan (lessons/common/rows_plan.cu) with strided rows of every element type.
#include "lessons/common/rows_plan.h"

namespace workbook {
namespace {

/// The benchmark shapes (rows x cols, element type).
std::vector<RowsBenchSpec> bench_shapes([[maybe_unused]] bool full) {
    [[maybe_unused]] const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
    if (!full)
        return {{32768, 256, f16},  {32768, 512, bf16}, {32768, 1024, f16}, {32768, 4096, bf16},
                {16384, 8192, f16}, {4096, 16384, bf16}, {128, 4096, bf16}, {8192, 5120, f16},
                {16384, 4096, f32}};
    std::vector<RowsBenchSpec> v;
    for (DType t : {f16, bf16}) {
        for (int64_t c : {256, 512, 1024, 2048, 4096, 6144}) v.push_back({32768, c, t});
        v.push_back({16384, 8192, t});
        v.push_back({8192, 16384, t});
        for (int64_t c : {8192, 16384, 32768, 65536}) v.push_back({4096, c, t});
        v.push_back({8192, 8192, t});
        v.push_back({16384, 16384, t});
        for (int64_t r : {1, 16, 128}) v.push_back({r, 4096, t});
        for (int64_t c : {4095, 5120, 7168}) v.push_back({16384, c, t});
    }
    v.push_back({16384, 4096, f32});
    return v;
}

LessonPlan plan(const Submission& student, const Submission* reference, const PlanOptions& opt) {
    RowsLesson lesson;
    lesson.typed = true;
    lesson.long_rows = false;
    lesson.bench = &bench_shapes;
    return rows_plan(lesson, student, *reference, opt);
}

}  // namespace
}  // namespace workbook

WORKBOOK_REGISTER_PLAN(4, &workbook::plan)
