/// @file submission_adapter.cpp
/// @brief Compiled around a CPU lesson's submission as plain C++: exports its table of entry points
///        (the same recipe as submission_adapter.cu, without CUDA).
#include WORKBOOK_SOURCE
#define WORKBOOK_CPU_ONLY
#define WORKBOOK_ADAPTER
#include WORKBOOK_LESSON_API

#define WORKBOOK_EXPORT_TABLE(n)                                                                  \
    extern "C" __attribute__((visibility("default"))) const workbook::api::Lesson##n* workbook_lesson##n##_api() { \
        static const workbook::api::Lesson##n table{workbook::api::kVersion, WORKBOOK_LESSON_ENTRIES}; \
        return &table;                                                                            \
    }
#define WORKBOOK_EXPAND(n) WORKBOOK_EXPORT_TABLE(n)
WORKBOOK_EXPAND(WORKBOOK_LESSON)
