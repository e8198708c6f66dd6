/// @file plan_dispatch.cpp
/// @brief Picks the plan builder of a lesson.
#include "plan_dispatch.h"

#include <stdexcept>

namespace workbook {

LessonPlan make_plan(int lesson, const Submission& student, const Submission* reference, const PlanOptions& opt) {
    if (lesson == 1) return cpu_plan(student);
    if (!reference) throw std::logic_error("GPU lessons need a reference");
    switch (lesson) {
        case 2:
        case 3:
        case 4:
        case 8: return rows_plan(lesson, student, *reference, opt);
#ifdef WORKBOOK_HAVE_LESSON_FUSED_ADD
        case 5: return fused_add_plan(student, *reference, opt);
#endif
#ifdef WORKBOOK_HAVE_LESSON_QK_NORM
        case 6: return qk_norm_plan(student, *reference, opt);
#endif
#ifdef WORKBOOK_HAVE_LESSON_PDL
        case 7: return pdl_plan(student, *reference, opt);
#endif
#ifdef WORKBOOK_HAVE_LESSON_PRODUCTION
        case 9: return production_plan(student, *reference, opt);
#endif
#ifdef WORKBOOK_HAVE_LESSON_BACKWARD
        case 10: return backward_plan(student, *reference, opt);
#endif
#ifdef WORKBOOK_HAVE_LESSON_FP8_QUANT
        case 11: return fp8_quant_plan(student, *reference, opt);
#endif
    }
    throw std::runtime_error("lesson " + std::to_string(lesson) + " has no cases in this build");
}

}  // namespace workbook
