/// @file api.h
/// @brief Lesson 8's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "lessons/common/rows_api.h"

namespace workbook::api {
/// Lesson 8: strided rows, one entry per element type.
using Lesson8 = StridedTable;
}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES WORKBOOK_TYPED(workbook::lesson8::rmsnorm)
#endif
