/// @file api.h
/// @brief Lesson 9's table of entry points: what the adapter exports from a submission and the grader calls.
#pragma once

#include "workbook/lesson_api.h"
#include "workbook/production_norm.h"

namespace workbook::api {

/// Lesson 9: the production norm behind a descriptor (types in production_norm.h). One table
/// for every dtype: the types are chosen at run time, inside the descriptor.
struct Lesson9 {
    int version;
    lesson9::Status (*create)(const lesson9::NormProblem& problem, lesson9::NormDescriptor** out);
    cudaError_t (*launch)(const lesson9::NormDescriptor* desc, cudaStream_t stream);
    void (*destroy)(lesson9::NormDescriptor* desc);
};

}  // namespace workbook::api

/// The adapter (grader/adapters) fills the table with the submission's entry points, in table order.
#ifdef WORKBOOK_ADAPTER
#define WORKBOOK_LESSON_ENTRIES &workbook::lesson9::norm_create, &workbook::lesson9::norm_launch, &workbook::lesson9::norm_destroy
#endif
