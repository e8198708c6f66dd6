// Lesson 9's descriptor rules, on the CPU: the reference's norm_create returns exactly the
// Status each faulty problem of the grader's table expects (and accepts the valid ones), and
// sets *out to nullptr when it refuses. norm_create does no device work, so no GPU is needed.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <set>
#include <string>

#include "lessons/09-production-norm/error_cases.h"
#include "lessons/09-production-norm/api.h"

using namespace workbook;

namespace {

const api::Lesson9* reference_table() {
    static const api::Lesson9* table = [] {
        void* handle = dlopen(WORKBOOK_LESSON9_REFERENCE, RTLD_NOW | RTLD_LOCAL);
        if (!handle) return static_cast<const api::Lesson9*>(nullptr);
        auto get = reinterpret_cast<const api::Lesson9* (*)()>(dlsym(handle, "workbook_lesson9_api"));
        return get ? get() : nullptr;
    }();
    return table;
}

}  // namespace

TEST(ProductionContract, ReferenceReturnsEveryExpectedStatus) {
    const api::Lesson9* table = reference_table();
    ASSERT_NE(table, nullptr) << "cannot open " << WORKBOOK_LESSON9_REFERENCE << ": " << dlerror();
    int checked = 0;
    for (const production::ErrorCase& e : production::error_cases()) {
        lesson9::NormProblem p = e.three_d ? production::valid_problem_3d() : production::valid_problem();
        e.mutate(p);
        lesson9::NormDescriptor* desc = reinterpret_cast<lesson9::NormDescriptor*>(uintptr_t(1));
        const lesson9::Status got = table->create(p, e.null_out ? nullptr : &desc);
        EXPECT_EQ(std::string(lesson9::status_name(got)), lesson9::status_name(e.expected)) << e.name << ": " << e.what;
        if (e.null_out) continue;
        if (e.expected == lesson9::Status::success) {
            EXPECT_NE(desc, nullptr) << e.name;
            if (got == lesson9::Status::success) table->destroy(desc);
        } else {
            EXPECT_EQ(desc, nullptr) << e.name << ": a refused create sets *out to nullptr";
        }
        ++checked;
    }
    EXPECT_GT(checked, 150);
}

TEST(ProductionContract, EveryOutputMeetsEveryTensorByOneElement) {
    // The generated overlap cases: each output against each other tensor, sharing exactly one
    // element at the other's end and at its start (refused), and touching it from either side
    // (accepted). 3 outputs, 15 pairs.
    int starts = 0, ends = 0, after = 0, before = 0;
    for (const production::ErrorCase& e : production::error_cases()) {
        if (e.three_d) continue;
        const bool overlap = e.name.rfind("error_partial_overlap_", 0) == 0;
        starts += overlap && e.name.find("_starts_at_") != std::string::npos;
        ends += overlap && e.name.find("_ends_at_") != std::string::npos;
        after += e.name.rfind("accepts_", 0) == 0 && e.name.find("_right_after_") != std::string::npos;
        before += e.name.rfind("accepts_", 0) == 0 && e.name.find("_right_before_") != std::string::npos;
    }
    EXPECT_EQ(starts, 15);
    EXPECT_EQ(ends, 15);
    EXPECT_EQ(after, 15);
    EXPECT_EQ(before, 15);
}

TEST(ProductionContract, CaseNamesAreUnique) {
    std::set<std::string> names;
    for (const production::ErrorCase& e : production::error_cases())
        EXPECT_TRUE(names.insert(e.name).second) << "two cases named " << e.name;
}

TEST(ProductionContract, EveryStatusHasACase) {
    // Each failure code of the contract is expected by at least one case of the grader's table.
    for (int s = 1; s <= static_cast<int>(lesson9::Status::bad_mode); ++s) {
        bool found = false;
        for (const production::ErrorCase& e : production::error_cases())
            found = found || static_cast<int>(e.expected) == s;
        EXPECT_TRUE(found) << "no case expects Status::" << lesson9::status_name(static_cast<lesson9::Status>(s));
    }
}

TEST(ProductionContract, DestroyAcceptsNull) {
    const api::Lesson9* table = reference_table();
    ASSERT_NE(table, nullptr);
    table->destroy(nullptr);
}
