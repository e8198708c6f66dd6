/// @file lesson_fused_add.cu
/// @brief Cases and benchmark shapes of lesson 5, the fused residual add.
///
/// Calls have five tensors: x, residual, weight (inputs) and y, residual_out (outputs).
/// The in-place forms make y share x's memory and residual_out share residual's,
/// independently, so all four combinations are graded.
#include "engine/gpu_case.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"
#include "lessons/05-fused-add/api.h"

namespace workbook {
namespace {

using FusedFn = std::function<cudaError_t(const void* x, const void* r, const void* w, void* y, void* r_out,
                                          int64_t rows, int64_t cols, float eps, cudaStream_t)>;

template <typename T>
FusedFn typed(api::FusedAddFn<T> fn) {
    return [fn](const void* x, const void* r, const void* w, void* y, void* r_out, int64_t rows, int64_t cols,
                float eps, cudaStream_t s) {
        return fn(static_cast<const T*>(x), static_cast<const T*>(r), static_cast<const T*>(w), static_cast<T*>(y),
                  static_cast<T*>(r_out), rows, cols, eps, s);
    };
}

FusedFn fused_fn(const Submission& s, DType t) {
    return typed_entry(s.table<api::Lesson5>(), t, [](auto fn) { return typed(fn); });
}

struct FusedCase {
    std::string name, what;
    int64_t rows, cols;
    InputKind kind = InputKind::normal;
    bool y_in_place = false, residual_in_place = false;
    int64_t misalign = 0;
    bool f16_only = false;
    int repeats = 2;
    int misaligned_tensor = -1;  ///< this tensor alone (x, residual, weight, y, residual_out) one element off
    float eps = 1e-5f;
    bool repeat_call = false;    ///< called twice at the same addresses, new inputs in between
};

/// The tensors in the entry point's order, as the cases name them.
const char* const kTensorNames[] = {"x", "residual", "weight", "y", "residual_out"};

GpuCall fused_call(const FusedCase& c, DType dtype, uint64_t seed, const FusedFn& fn) {
    GpuCall call;
    call.dtype = dtype;
    OracleProblem& p = call.problem;
    p.rows = c.rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.x = input_spec(c.kind, seed, 0, c.rows);
    p.has_residual = true;
    // The residual stays ordinary: in fp16_huge_values the sum must still fit in fp16.
    p.residual = input_spec(c.kind == InputKind::huge ? InputKind::normal : c.kind, seed, 1, c.rows);
    if (c.kind == InputKind::nan_row) p.residual.nan_row = -1;
    p.weight = weight_spec(seed);
    const Layout rows = Layout::rows_of(c.rows, c.cols, c.cols);
    auto misalign = [&c](int tensor) { return c.misalign + (c.misaligned_tensor == tensor ? 1 : 0); };
    TensorRole y{"y", rows, misalign(3), false};
    y.extra_ulps = 1;  // the contract allows normalising the rounded residual_out
    y.alias_of = c.y_in_place ? 0 : -1;
    TensorRole r_out{"residual_out", rows, misalign(4), false};
    r_out.kind = OutputKind::rounded_sum;
    r_out.alias_of = c.residual_in_place ? 1 : -1;
    call.tensors = {TensorRole{"x", rows, misalign(0), true, p.x}, TensorRole{"residual", rows, misalign(1), true, p.residual},
                    TensorRole{"weight", Layout::rows_of(1, c.cols, c.cols), misalign(2), true, p.weight}, y, r_out};
    const int64_t n = c.rows, cols = c.cols;
    const float eps = c.eps;
    call.launch = [fn, n, cols, eps](const std::vector<void*>& d, cudaStream_t s) {
        return fn(d[0], d[1], d[2], d[3], d[4], n, cols, eps, s);
    };
    return c.repeat_call ? repeated_at_same_addresses(std::move(call)) : call;
}

std::vector<FusedCase> fused_cases() {
    const InputKind normal = InputKind::normal;
    std::vector<FusedCase> v = {
        {"out_of_place", "y, residual_out separate from x, residual", 500, 4096},
        {"in_place", "y == x and residual_out == residual, as LLM engines call it", 500, 4096, normal, true, true},
        {"in_place_large", "16385 x 8192 in place: 256 MiB of input or more, where long rows may be read twice",
         16385, 8192, normal, true, true},
        {"y_aliases_x_only", "y == x, residual_out separate", 300, 2048, normal, true, false},
        {"residual_aliases_only", "residual_out == residual, y separate", 300, 2048, normal, false, true},
        {"rows_zero", "rows = 0 returns success and launches nothing", 0, 1024},
        {"one_row", "a single row", 1, 8192},
        {"few_rows_part_block", "3 rows of 2056 columns: a decode batch whose row leaves part of its block idle "
         "(257 16-byte vectors of fp16/bf16 in 512 threads), the last row ending at the end of every tensor", 3, 2056},
        {"few_rows_two_vectors_in_place", "5 rows of 5128 columns in place: a decode batch of two 16-byte vectors a "
         "thread whose last ones are partly idle", 5, 5128, normal, true, true},
        {"many_rows_gt_65535", "70001 rows", 70001, 136},
        {"short_rows_in_place", "1001 rows of 256 columns, in place: a block of several rows ends part-way", 1001,
         256, normal, true, true},
        {"short_rows_512", "1003 rows of 512 columns: a block of several rows ends part-way", 1003, 512},
        {"cols_1", "rows of one element", 257, 1, normal, true, true},
        {"cols_lt_warp", "19 columns", 1000, 19},
        {"prime_cols", "4099 columns, in place", 513, 4099, normal, true, true},
        {"odd_cols", "1001 columns", 300, 1001},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops to 4", 400, 4100},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 4095},
        {"cols_gt_1024xwidth", "9000 columns, in place", 200, 9000, normal, true, true},
        {"cols_max_65536", "65536 columns, the longest row", 64, 65536},
        {"cols_36000", "36000 columns, in place: rows past 32768 that a block's 1024 threads do not divide "
         "(4500 vectors of 8 fp16, 9000 of 4 fp32), the last step of a row partly full",
         3, 36000, normal, true, true},
        {"odd_cols_max", "65535 columns, the longest odd row, in place: width 1, too long for registers", 5, 65535,
         normal, true, true},
        {"odd_long_rows_outlier_last", "16385 = 2^14 + 1 columns, each row's last element 256: a long odd row "
         "whose end dominates its sum", 5, 16385, InputKind::outlier_last},
        {"misaligned_base", "every pointer one element past an aligned address, in place", 300, 4096, normal, true,
         true, 1},
        {"all_zero_rows", "every other row of x and residual is zero", 1000, 1024, InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in row 37 of x must not leak into other rows", 100, 2048, InputKind::nan_row},
        {"fp16_huge_values", "x near 65504: squares overflow an fp16 accumulator", 256, 4096, InputKind::huge, false,
         false, 0, true},
        {"past_2pow31_elements", "rows x cols past 2^31 elements, in place", 32769, 65536, normal, true, true, 0,
         true, 1},
    };
    FusedCase eps{"eps_inside_sqrt", "small values with eps = 1e-2: the eps argument, inside the square root", 300,
                  512, InputKind::small};
    eps.eps = 1e-2f;
    v.push_back(eps);
    FusedCase repeat{"repeat_new_inputs_same_addresses",
                     "called twice on the same tensors, in place, new values written between the calls: the second "
                     "call's outputs must be those of the new inputs",
                     300, 4096, normal, true, true};
    repeat.repeat_call = true;
    v.push_back(repeat);
    // The alignment rule as cases, one pointer at a time (out of place, so each output has its own):
    // a vector width that forgets one of the five pointers fails by that pointer's name.
    for (int t = 0; t < 5; ++t) {
        FusedCase mis{std::string("layout_") + kTensorNames[t] + "_base_misaligned",
                      std::string(kTensorNames[t]) + " one element past an aligned address, every other pointer aligned",
                      96, 2048};
        mis.misaligned_tensor = t;
        v.push_back(mis);
    }
    return v;
}

}  // namespace

static LessonPlan fused_add_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    for (const FusedCase& c : fused_cases()) {
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const FusedFn fn = fused_fn(student, t);
            const bool large = c.rows * c.cols > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(c.name + "_" + dtype_name(t), c.what,
                                               [c, t, fn](uint64_t seed) { return fused_call(c, t, seed, fn); },
                                               c.repeats, large));
        }
    }
    struct Shape {
        int64_t rows, cols;
        DType t;
    };
    std::vector<Shape> shapes = {{32768, 4096, DType::bf16}, {16384, 8192, DType::f16}, {32768, 1024, DType::bf16},
                                 {32768, 256, DType::f16},   {128, 4096, DType::bf16},  {8192, 5120, DType::bf16}};
    if (opt.full_bench)
        for (int64_t c : {512, 2048, 6144}) shapes.push_back({32768, c, DType::bf16});
    for (const Shape& s : shapes) {
        FusedCase c{"", "", s.rows, s.cols};
        const std::string shape = std::to_string(s.rows) + "x" + std::to_string(s.cols);
        const FusedFn fs = fused_fn(student, s.t), fr = fused_fn(reference, s.t);
        const DType t = s.t;
        FusedCase checked = c;
        checked.rows = checked_bench_rows(s.rows, s.cols, opt);
        plan.cases.push_back(make_gpu_case("bench_" + shape + "_" + dtype_name(t), checked_bench_what(s.rows, checked.rows),
                                           [checked, t, fs](uint64_t seed) { return fused_call(checked, t, seed, fs); },
                                           1, true));
        plan.bench.push_back(make_bench_shape(shape, t, [c, t, fs](uint64_t seed) { return fused_call(c, t, seed, fs); },
                                              [c, t, fr](uint64_t seed) { return fused_call(c, t, seed, fr); }));
    }
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(5, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::fused_add_plan(student, *reference, opt); })
