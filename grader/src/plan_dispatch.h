/// @file plan_dispatch.h
#pragma once
#include "lesson_plans.h"

namespace workbook {
/// The plan of `lesson`: its cases and, for GPU lessons, its benchmark shapes.
LessonPlan make_plan(int lesson, const Submission& student, const Submission* reference, const PlanOptions& opt);
}  // namespace workbook
