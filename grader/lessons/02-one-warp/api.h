/// @file api.h
/// @brief Lesson 2's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "lessons/common/rows_api.h"

namespace workbook::api {
/// Lesson 2: fp32, contiguous rows.
using Lesson2 = RowsTable;
}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES &workbook::lesson2::rmsnorm
#endif
