/// @file submission.h
/// @brief Opens a compiled submission privately and returns its table of entry points.
#pragma once

#include <string>
#include <utility>

namespace workbook {

/// A submission's shared library, opened with its own symbol scope.
class Submission {
public:
    /// Opens `path` and looks up workbook_lesson<lesson>_api; throws std::runtime_error with advice on failure.
    Submission(const std::string& path, int lesson);
    /// A table that lives elsewhere (remote grading's proxies); `label` names it in messages.
    Submission(const void* table, std::string label) : path_(std::move(label)), table_(table) {}
    ~Submission();
    Submission(const Submission&) = delete;
    Submission& operator=(const Submission&) = delete;

    /// The lesson's table (workbook::api::LessonN), checked for the right version.
    template <typename Table>
    const Table& table() const {
        return *static_cast<const Table*>(table_);
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    void* handle_ = nullptr;
    const void* table_ = nullptr;
};

}  // namespace workbook
