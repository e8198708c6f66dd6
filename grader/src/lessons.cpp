/// @file lessons.cpp
/// @brief The lessons' static facts: slug, whether a GPU is needed, and the gate fraction.
#include "case_registry.h"

namespace workbook {

namespace {
// Gate fractions: the one-warp and block lessons compare simple kernels with simple
// references, where launch shape matters more than craft, so they ask for 0.7; from
// lesson 4 on the reference is tuned and the gate asks for 0.8 of it.
constexpr LessonInfo kLessons[] = {
    {1, "01-cpu-reference", false, 0, 0.0},
    {2, "02-one-warp", true, 0, 0.7},
    {3, "03-block-reduce", true, 0, 0.7},
    {4, "04-vectorized", true, 0, 0.8},
    {5, "05-fused-add", true, 0, 0.8},
    {6, "06-qk-norm", true, 0, 0.8},
    {7, "07-pdl", true, 90, 0.8},
    {8, "08-cluster", true, 90, 0.8},
    {9, "09-production-norm", true, 0, 0.8},
    {10, "10-rmsnorm-backward", true, 90, 0.8},
    {11, "11-fp8-quant", true, 0, 0.8},
};
}  // namespace

const LessonInfo* find_lesson(int number) {
    for (const LessonInfo& l : kLessons)
        if (l.number == number) return &l;
    return nullptr;
}

}  // namespace workbook
