/// @file lesson_registry.cpp
/// @brief The registry behind find_lesson and make_plan.
#include "engine/lesson_registry.h"

#include <map>
#include <stdexcept>
#include <string>

namespace workbook {
namespace {

/// Function-local statics: registrations run during static initialisation, in any order.
std::map<int, LessonInfo>& infos() {
    static std::map<int, LessonInfo> m;
    return m;
}
std::map<int, PlanBuilder>& plans() {
    static std::map<int, PlanBuilder> m;
    return m;
}

}  // namespace

bool register_lesson_info(const LessonInfo& info) {
    if (!infos().emplace(info.number, info).second)
        throw std::logic_error("two manifests declare lesson " + std::to_string(info.number));
    return true;
}

bool register_plan(int lesson, PlanBuilder build) {
    if (!plans().emplace(lesson, build).second)
        throw std::logic_error("two plans register lesson " + std::to_string(lesson));
    return true;
}

const LessonInfo* find_lesson(int number) {
    auto it = infos().find(number);
    return it == infos().end() ? nullptr : &it->second;
}

bool has_plan(int lesson) { return plans().count(lesson) != 0; }

LessonPlan make_plan(int lesson, const Submission& student, const Submission* reference, const PlanOptions& opt) {
    auto it = plans().find(lesson);
    if (it == plans().end()) throw std::runtime_error("lesson " + std::to_string(lesson) + " has no cases in this build");
    const LessonInfo* info = find_lesson(lesson);
    if (info && info->needs_gpu && !reference) throw std::logic_error("GPU lessons need a reference");
    return it->second(student, reference, opt);
}

}  // namespace workbook
