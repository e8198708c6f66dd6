/// @file case_names.cpp
/// @brief The case list both graders print for `--list-cases`.
#include "app/case_names.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>

#include "engine/lesson_registry.h"
#include "report/run_report.h"

namespace workbook {

int print_case_names(const char* program, int lesson, const std::string& student, const std::string& reference) {
    const LessonInfo* info = find_lesson(lesson);
    if (!info || !has_plan(lesson)) {
        std::cerr << program << ": lesson " << lesson << " has no case plan in this build\n";
        return kUsage;
    }
    try {
        Submission student_lib(student, lesson);
        std::unique_ptr<Submission> reference_lib;
        if (!reference.empty()) reference_lib = std::make_unique<Submission>(reference, lesson);
        const Submission* against = reference_lib ? reference_lib.get() : info->needs_gpu ? &student_lib : nullptr;
        const LessonPlan plan = make_plan(lesson, student_lib, against, PlanOptions{});
        for (const Case& c : plan.cases) std::printf("%s\n", c.name.c_str());
        return kPass;
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return kFailBuild;
    }
}

}  // namespace workbook
