/// @file submission.cpp
#include "engine/submission.h"

#include <dlfcn.h>

#include <stdexcept>

namespace workbook {

namespace {
/// Every table starts with its version, so it can be read before the lesson's type is known.
struct TableHeader {
    int version;
};
constexpr int kApiVersion = 1;
}  // namespace

Submission::Submission(const std::string& path, int lesson) : path_(path) {
    // RTLD_LOCAL keeps the submission's symbols out of the global scope, so the reference
    // and a submission may both define kernels and helpers of the same names.
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error("cannot load the compiled submission " + path + ": " + dlerror() +
                                           "\n  rebuild it (make lessonN, or ./grade lessonN --source FILE)");
    const std::string symbol = "workbook_lesson" + std::to_string(lesson) + "_api";
    auto get = reinterpret_cast<const void* (*)()>(dlsym(handle_, symbol.c_str()));
    if (!get) throw std::runtime_error(path + " does not export " + symbol + ": it was built for another lesson");
    table_ = get();
    if (static_cast<const TableHeader*>(table_)->version != kApiVersion)
        throw std::runtime_error(path + " was built against another version of the grader: rebuild it");
}

Submission::~Submission() {
    // Libraries stay loaded until exit: CUDA may still hold their kernels in captured graphs.
}

}  // namespace workbook
