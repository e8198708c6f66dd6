/// @file lesson1_cpu.cpp
/// @brief Cases of lesson 1, graded entirely on the CPU against the same fp64 oracle.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/buffer_hooks.h"
#include "engine/poison.h"
#include "report/compare_report.h"
#include "report/guard_report.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/01-cpu-reference/api.h"
#include "workbook/oracle.h"
#include "workbook/tolerance.h"

namespace workbook {
namespace {

constexpr size_t kGuard = 1024;  ///< floats of guard zone on each side of the output
constexpr float kGuardValue = -12345.678f;

struct CpuCase {
    std::string name, what;
    int64_t rows, cols;
    InputKind kind = InputKind::normal;
    float eps = 1e-5f;
    bool twice = false;  ///< called first on other values in the same arrays, then on the case's own
};

constexpr const char* kSecondCall =
    "on the second call in the same arrays (the first call had other values in x and weight): ";

/// Writes the values of `p`'s x and weight into the arrays.
void write_inputs(const OracleProblem& p, float* x, float* w) {
    for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t col = 0; col < p.cols; ++col) x[r * p.cols + col] = input_value<float>(p.x, r, col, p.cols);
    for (int64_t col = 0; col < p.cols; ++col) w[col] = input_value<float>(p.weight, 0, col, p.cols);
}

/// The guard zones around the n output elements at y + kGuard: one message per zone a call wrote into.
std::vector<std::string> guard_writes(const float* y, size_t n) {
    std::vector<std::string> out;
    auto value = [](float v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
    };
    for (bool before : {true, false}) {
        GuardWrite g;
        g.before = before;
        g.span = static_cast<int64_t>(n);
        for (size_t k = 0; k < kGuard; ++k) {
            // The nearest element to the output first: the last one before it, the first one after it.
            const size_t at = before ? kGuard - 1 - k : kGuard + n + k;
            if (y[at] == kGuardValue) continue;
            if (g.changed++ == 0) {
                g.index = static_cast<int64_t>(at) - static_cast<int64_t>(kGuard);
                g.got = value(y[at]);
            }
        }
        g.expected = "the guard value " + value(kGuardValue);
        if (g.changed) out.push_back(describe_guard_write(g, "y"));
    }
    return out;
}

CaseOutcome run_cpu_case(const CpuCase& c, uint64_t seed, const api::Lesson1& fn) {
    OracleProblem p;
    p.rows = c.rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.x = input_spec(c.kind, seed, 0, c.rows);
    p.weight = weight_spec(seed);
    const size_t n = static_cast<size_t>(c.rows * c.cols);
    // Allocated through the buffer hooks: under remote grading the submission's process maps them.
    HostArray<float> x(n), w(static_cast<size_t>(c.cols)), y(n + 2 * kGuard, kGuardValue);
    float* out = y.data() + kGuard;
    float poison;
    std::memcpy(&poison, &Poison<float>::bits, sizeof poison);
    if (c.twice) {
        // A first call on other values in the same arrays: the second call's outputs are checked.
        OracleProblem other = p;
        other.x.seed = mix64(p.x.seed ^ 0x2ca11ull);
        other.weight.seed = mix64(p.weight.seed ^ 0x2ca11ull);
        write_inputs(other, x.data(), w.data());
        std::fill(out, out + n, poison);
        fn.rmsnorm(x.data(), w.data(), out, c.rows, c.cols, c.eps);
    }
    write_inputs(p, x.data(), w.data());
    const std::vector<float> x_before(x.data(), x.data() + n), w_before(w.data(), w.data() + w.size());
    std::fill(out, out + n, poison);

    fn.rmsnorm(x.data(), w.data(), out, c.rows, c.cols, c.eps);

    CompareResult cmp;
    cmp.tol = output_tolerance(DType::f32, c.cols);
    cmp.total = n;
    for (int64_t r = 0; r < c.rows; ++r) {
        const double inv = oracle_inv_rms<float>(p, r);
        for (int64_t col = 0; col < c.cols; ++col) {
            const double expected = oracle_output<float>(p, r, col, inv);
            const float got = out[r * c.cols + col];
            if (within(expected, got, cmp.tol)) continue;
            // Never written means the poison's exact bits: a NaN the kernel computed is not that.
            const bool never = is_poison(got);
            cmp.unwritten += never;
            cmp.nan += !never && got != got;
            if (cmp.bad++ == 0) {
                cmp.first_row = r;
                cmp.first_col = col;
                cmp.expected = expected;
                cmp.got = got;
                cmp.first_unwritten = never;
            }
        }
    }
    std::string problems = cmp.bad ? describe_failure(cmp, "y") : "";
    for (const std::string& g : guard_writes(y.data(), n))
        problems += std::string(problems.empty() ? "" : "; ") + g;
    if (std::memcmp(x.data(), x_before.data(), n * sizeof(float)) != 0 ||
        std::memcmp(w.data(), w_before.data(), w.size() * sizeof(float)) != 0)
        problems += (problems.empty() ? "" : "; ") + std::string("the inputs x or weight were modified");
    if (problems.empty()) return CaseOutcome::pass();
    return CaseOutcome::fail(c.twice ? kSecondCall + problems : problems);
}

}  // namespace

static LessonPlan cpu_plan(const Submission& student) {
    const std::vector<CpuCase> cases = {
        {"rows_zero", "rows = 0 does nothing", 0, 64},
        {"one_row", "a single row", 1, 4096},
        {"cols_1", "rows of one element", 33, 1},
        {"cols_lt_warp", "19 columns", 100, 19},
        {"prime_cols", "4099 columns", 17, 4099},
        {"odd_cols", "1001 columns", 40, 1001},
        {"many_rows_gt_65535", "70001 short rows", 70001, 8},
        {"all_zero_rows", "every other row is all zeros: outputs 0, not NaN", 64, 512, InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in row 37 must not leak into other rows", 64, 256, InputKind::nan_row},
        {"eps_inside_sqrt", "small values with eps = 1e-2: eps belongs inside the square root", 32, 512,
         InputKind::small, 1e-2f},
        {"fp32_drift_long_rows", "65536 columns: a plain fp32 loop drifts but stays in tolerance", 8, 65536},
        {"bench_1024x4096_f32", "a larger matrix", 1024, 4096},
    };
    LessonPlan plan;
    const api::Lesson1& fn = student.table<api::Lesson1>();
    for (const CpuCase& c : cases) {
        Case k;
        k.name = c.name;
        k.what = c.what;
        // The second repetition calls twice in the same arrays, the first time on other values:
        // nothing may be kept from one call to the next.
        k.run = [c, &fn](uint64_t seed, int rep) {
            CpuCase kase = c;
            kase.twice = rep == 1;
            return run_cpu_case(kase, seed, fn);
        };
        plan.cases.push_back(k);
    }
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(1, [](const workbook::Submission& student, const workbook::Submission*,
                             const workbook::PlanOptions&) { return workbook::cpu_plan(student); })
