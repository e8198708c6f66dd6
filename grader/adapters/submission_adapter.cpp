/// @file submission_adapter.cpp
/// @brief Compiled around a lesson 1 submission as plain C++: exports its entry point.
#include WORKBOOK_SOURCE
#define WORKBOOK_CPU_ONLY
#include "workbook/lesson_api.h"

extern "C" __attribute__((visibility("default"))) const workbook::api::Lesson1* workbook_lesson1_api() {
    static const workbook::api::Lesson1 table{workbook::api::kVersion, &workbook::lesson1::rmsnorm};
    return &table;
}
