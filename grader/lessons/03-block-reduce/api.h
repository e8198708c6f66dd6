/// @file api.h
/// @brief Lesson 3's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "lessons/common/rows_api.h"

namespace workbook::api {
/// Lesson 3: fp32, contiguous rows.
using Lesson3 = RowsTable;
}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES &workbook::lesson3::rmsnorm
#endif
