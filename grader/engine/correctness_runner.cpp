/// @file correctness_runner.cpp
/// @brief Each case becomes a GoogleTest test; a listener prints one line per case.
#include "engine/correctness_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "report/failure_summary.h"
#include "engine/launch_guard.h"
#include "workbook/inputs.h"

#ifdef WORKBOOK_CPU_EMULATOR
#include "emu/control.h"
#endif

namespace workbook {
namespace {

std::string g_fatal;  ///< set once the device is unusable; later cases are skipped
bool g_fail_fast = false;  ///< --fail-fast: later cases are skipped once one has failed
bool g_failed = false;     ///< a case has failed

/// On the CPU emulator, the first read of shared memory no thread had written since the last call
/// ("" on a GPU, which cannot tell).
std::string unwritten_shared_read() {
#ifdef WORKBOOK_CPU_EMULATOR
    return emu::take_unwritten_shared_read();
#else
    return "";
#endif
}

/// A read of never-written shared memory fails the case, named before the wrong values it led to:
/// on a GPU the slot holds whatever was there, so the kernel is wrong even where the values
/// happen to pass here. A launch, stream or kernel failure stays the first cause.
CaseOutcome with_unwritten_read(CaseOutcome outcome, const std::string& read) {
    if (read.empty()) return outcome;
    if (outcome.passed) return CaseOutcome::fail(read);
    if (outcome.cause == FailureCause::output) outcome.detail = read + "; " + outcome.detail;
    return outcome;
}

class CaseTest : public testing::Test {
public:
    CaseTest(const Case& c, uint64_t seed, CaseResult& result) : case_(c), seed_(seed), result_(result) {}
    void TestBody() override {
        if (!g_fatal.empty()) {
            result_.skipped = true;
            result_.detail = "not run: the device became unusable in an earlier case";
            GTEST_SKIP() << result_.detail;
        }
        if (g_fail_fast && g_failed) {
            result_.skipped = true;
            result_.detail = kFailFastNotRun;
            GTEST_SKIP() << result_.detail;
        }
        for (int rep = 0; rep < case_.repeats; ++rep) {
            CaseOutcome outcome;
            unwritten_shared_read();  // what an earlier case left is not this one's
            try {
                outcome = case_.run(derive_seed(seed_, case_.name.c_str(), rep), rep);
            } catch (const FatalDeviceError& e) {
                g_fatal = e.what();
                outcome = CaseOutcome::fail(e.what(), FailureCause::kernel);
            } catch (const std::exception& e) {
                outcome = CaseOutcome::fail(std::string("the grader could not run this case: ") + e.what());
            }
            outcome = with_unwritten_read(std::move(outcome), unwritten_shared_read());
            if (!outcome.passed) {
                result_.message = outcome.detail;
                result_.cause = cause_name(outcome.cause);
                result_.detail = outcome.detail;
                if (case_.repeats > 1)
                    result_.detail += " (repetition " + std::to_string(rep + 1) + " of " +
                                      std::to_string(case_.repeats) + ")";
                g_failed = true;
                ADD_FAILURE() << result_.detail;
                return;
            }
        }
        result_.passed = true;
    }

private:
    const Case& case_;
    uint64_t seed_;
    CaseResult& result_;
};

/// One line per case, in place of GoogleTest's own printer. A failure identical to one already
/// printed is held back; run_cases prints one line for all of them at the end.
class CaseLinePrinter : public testing::EmptyTestEventListener {
public:
    explicit CaseLinePrinter(const RunReport& report) : report_(report) {}
    void OnTestEnd(const testing::TestInfo& info) override {
        for (const CaseResult& c : report_.cases) {
            if (c.name != info.name()) continue;
            if (c.skipped && c.detail == kFailFastNotRun) continue;  // counted once at the end
            if (c.skipped) std::printf("  SKIP  %s\n", c.name.c_str());
            else if (c.passed) std::printf("  pass  %s\n", c.name.c_str());
            else if (printed_.insert(failure_key(c)).second)
                std::printf("  FAIL  %s  (%s)\n        %s\n", c.name.c_str(), c.what.c_str(), c.detail.c_str());
            std::fflush(stdout);
        }
    }

private:
    const RunReport& report_;
    std::set<std::string> printed_;
};

}  // namespace

size_t fail_fast_not_run(const RunReport& report) {
    size_t n = 0;
    for (const CaseResult& c : report.cases) n += c.skipped && c.detail == kFailFastNotRun;
    return n;
}

bool case_selected(const std::string& filter, const std::string& name) {
    if (filter.empty()) return true;
    size_t start = 0;
    while (start <= filter.size()) {
        const size_t comma = std::min(filter.find(',', start), filter.size());
        const std::string part = filter.substr(start, comma - start);
        // `=NAME` selects the case named NAME exactly (a list made by a program: mutation coverage).
        if (part.size() > 1 && part[0] == '=' ? name == part.substr(1)
                                              : !part.empty() && name.find(part) != std::string::npos)
            return true;
        start = comma + 1;
    }
    return false;
}

std::string run_cases(const LessonPlan& plan, uint64_t seed, const std::string& filter, const RunOptions& options,
                      RunReport& report) {
    g_fail_fast = options.fail_fast;
    g_failed = false;
    std::vector<const Case*> order;
    for (const Case& c : plan.cases) order.push_back(&c);
    if (options.fail_fast) {
        // Cheap cases first, so a wrong kernel is usually stopped by a small one. Each case's inputs
        // come from its name, not its place, so the order changes no case's data.
        std::stable_sort(order.begin(), order.end(),
                         [](const Case* a, const Case* b) { return a->elements < b->elements; });
    }
    report.cases.reserve(plan.cases.size());
    for (const Case* kase_in_order : order) {
        const Case& c = *kase_in_order;
        if (options.small_only && c.large) continue;
        if (!case_selected(filter, c.name)) continue;
        report.cases.push_back(CaseResult{c.name, c.what, false, false, ""});
        CaseResult* result = &report.cases.back();
        const Case* kase = &c;
        testing::RegisterTest(("lesson" + std::to_string(report.lesson)).c_str(), c.name.c_str(), nullptr, nullptr,
                              __FILE__, __LINE__, [kase, seed, result]() -> testing::Test* {
                                  return new CaseTest(*kase, seed, *result);
                              });
    }
    int argc = 1;
    char arg0[] = "wb-grader";
    std::vector<char*> argv{arg0, nullptr};
    testing::InitGoogleTest(&argc, argv.data());
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new CaseLinePrinter(report));
    const int gtest_status = RUN_ALL_TESTS();
    (void)gtest_status;  // the per-case results below carry the verdict
    for (const FailureGroup& g : group_failures(report.cases)) {
        const std::string line = repeated_failure_line(g);
        if (!line.empty()) std::printf("  FAIL  %s\n", line.c_str());
    }
    const size_t left_out = fail_fast_not_run(report);
    if (left_out) std::printf("  ----  %zu more case(s) not run: --fail-fast stops at the first failing case\n", left_out);
    std::fflush(stdout);
    return g_fatal;
}

}  // namespace workbook
