/// @file remote_registry.h
/// @brief How a lesson is graded remotely: its proxy tables (grader side) and its invokers
///        (submission side), registered from the lesson's own grader/lessons/NN-slug/remote.cu.
#pragma once

#include <vector>

#include "remote/remote_calls.h"

namespace workbook::remote {

/// A lesson's two sides of a remote call.
struct RemoteLesson {
    const void* (*student_table)();    ///< proxies that call the student's process
    const void* (*reference_table)();  ///< proxies that call the reference's process
    std::vector<Invoker> (*invokers)(const void* table);  ///< the real table's entries, in proxy order
};

bool register_remote_lesson(int lesson, const RemoteLesson& remote);
/// nullptr when the lesson cannot be graded remotely in this build.
const RemoteLesson* find_remote_lesson(int lesson);

}  // namespace workbook::remote

/// Registers lesson `n`'s remote tables: `table_template` is a template <int Side> const void* ().
#define WORKBOOK_REGISTER_REMOTE(n, table_template, invokers)                                              \
    namespace {                                                                                            \
    [[maybe_unused]] const bool workbook_remote_registered_##n = ::workbook::remote::register_remote_lesson( \
        n, {&table_template<0>, &table_template<1>, invokers});                                             \
    }
