/// @file submission_adapter.cu
/// @brief Compiled around one submission: exports the table of its lesson's entry points.
///
/// Built with -DWORKBOOK_LESSON=N -DWORKBOOK_SOURCE="path/to/file". The submission is
/// included, not linked, so its templates are instantiated here for every element type.
/// Lesson 1 builds this file as plain C++ (see submission_adapter.cpp).
#include WORKBOOK_SOURCE
#include "workbook/lesson_api.h"

#define WORKBOOK_EXPORT extern "C" __attribute__((visibility("default")))

/// The three element types of one templated entry point, in table order.
#define WORKBOOK_TYPED(fn) &fn<float>, &fn<__half>, &fn<__nv_bfloat16>

namespace wa = workbook::api;

#if WORKBOOK_LESSON == 2 || WORKBOOK_LESSON == 3
#define WORKBOOK_TABLE(n) static const wa::Lesson##n table{wa::kVersion, &workbook::lesson##n::rmsnorm}
#elif WORKBOOK_LESSON == 4 || WORKBOOK_LESSON == 7 || WORKBOOK_LESSON == 8
#define WORKBOOK_TABLE(n) static const wa::Lesson##n table{wa::kVersion, WORKBOOK_TYPED(workbook::lesson##n::rmsnorm)}
#elif WORKBOOK_LESSON == 5
#define WORKBOOK_TABLE(n) \
    static const wa::Lesson##n table{wa::kVersion, WORKBOOK_TYPED(workbook::lesson##n::fused_add_rmsnorm)}
#elif WORKBOOK_LESSON == 6
#define WORKBOOK_TABLE(n) static const wa::Lesson##n table{wa::kVersion, WORKBOOK_TYPED(workbook::lesson##n::qk_rmsnorm)}
#elif WORKBOOK_LESSON == 9
#define WORKBOOK_TABLE(n)                                                                                      \
    static const wa::Lesson##n table{wa::kVersion, &workbook::lesson9::norm_create, &workbook::lesson9::norm_launch, \
                                     &workbook::lesson9::norm_destroy}
#elif WORKBOOK_LESSON == 10
#define WORKBOOK_TABLE(n)                                                                          \
    static const wa::Lesson##n table{wa::kVersion, WORKBOOK_TYPED(workbook::lesson10::rmsnorm_backward), \
                                     WORKBOOK_TYPED(workbook::lesson10::rmsnorm_backward_workspace_bytes)}
#elif WORKBOOK_LESSON == 11
#define WORKBOOK_TABLE(n) \
    static const wa::Lesson##n table{wa::kVersion, WORKBOOK_TYPED(workbook::lesson##n::rmsnorm_fp8_quant)}
#else
#error "WORKBOOK_LESSON must be 2 to 11 for a CUDA submission"
#endif

#define WORKBOOK_EXPORT_TABLE(n)                                                  \
    WORKBOOK_EXPORT const wa::Lesson##n* workbook_lesson##n##_api() {             \
        WORKBOOK_TABLE(n);                                                        \
        return &table;                                                            \
    }
#define WORKBOOK_EXPAND(n) WORKBOOK_EXPORT_TABLE(n)
WORKBOOK_EXPAND(WORKBOOK_LESSON)
