/// @file api.h
/// @brief Lesson 1's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"

namespace workbook::api {

/// Lesson 1: the CPU reference.
struct Lesson1 {
    int version;
    void (*rmsnorm)(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps);
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES &workbook::lesson1::rmsnorm
#endif
