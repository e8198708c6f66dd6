/// @file submission_adapter.cu
/// @brief Compiled around one submission: exports the table of its lesson's entry points.
///
/// Built with -DWORKBOOK_LESSON=N -DWORKBOOK_SOURCE="path/to/file"
/// -DWORKBOOK_LESSON_API="lessons/NN-slug/api.h" and the grader folder on the include path. The
/// submission is included, not linked, so its templates are instantiated here for every element
/// type; the lesson's api.h says which entry points fill its table (WORKBOOK_LESSON_ENTRIES).
/// Lesson 1 builds this file as plain C++ (see submission_adapter.cpp).
#include WORKBOOK_SOURCE

/// The three element types of one templated entry point, in table order.
#define WORKBOOK_TYPED(fn) &fn<float>, &fn<__half>, &fn<__nv_bfloat16>
#define WORKBOOK_ADAPTER
#include WORKBOOK_LESSON_API

#ifndef WORKBOOK_LESSON_ENTRIES
#error "the lesson's api.h must define WORKBOOK_LESSON_ENTRIES under WORKBOOK_ADAPTER"
#endif

#define WORKBOOK_EXPORT extern "C" __attribute__((visibility("default")))
#define WORKBOOK_EXPORT_TABLE(n)                                                                  \
    WORKBOOK_EXPORT const workbook::api::Lesson##n* workbook_lesson##n##_api() {                  \
        static const workbook::api::Lesson##n table{workbook::api::kVersion, WORKBOOK_LESSON_ENTRIES}; \
        return &table;                                                                            \
    }
#define WORKBOOK_EXPAND(n) WORKBOOK_EXPORT_TABLE(n)
WORKBOOK_EXPAND(WORKBOOK_LESSON)
