/// @file rows_plan.cu
/// @brief Cases of the row-normalisation lessons 2, 3, 4 and 8; each brings its own benchmark shapes.
///
/// Lessons 2 and 3 take fp32 contiguous rows; lessons 4 and 8 take any element type, row
/// strides and element-aligned pointers. One case table serves all four: a case says
/// which of those freedoms it exercises, and a lesson runs the cases its contract allows.
#include <string>
#include <vector>

#include "engine/gpu_case.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"
#include "lessons/common/rows_plan.h"
#include "lessons/common/rows_api.h"

namespace workbook {
namespace {

/// The strided entry point with its element type erased.
using RowsFn = std::function<cudaError_t(const void* x, int64_t x_stride, const void* w, void* y, int64_t y_stride,
                                         int64_t rows, int64_t cols, float eps, cudaStream_t stream)>;

template <typename T>
RowsFn typed_rows_fn(api::StridedFn<T> fn) {
    return [fn](const void* x, int64_t xs, const void* w, void* y, int64_t ys, int64_t rows, int64_t cols, float eps,
                cudaStream_t stream) {
        return fn(static_cast<const T*>(x), xs, static_cast<const T*>(w), static_cast<T*>(y), ys, rows, cols, eps,
                  stream);
    };
}

RowsFn rows_fn(const RowsLesson& lesson, const Submission& s, DType dtype) {
    if (!lesson.typed) {
        auto fn = s.table<api::RowsTable>().rmsnorm;
        return [fn](const void* x, int64_t, const void* w, void* y, int64_t, int64_t rows, int64_t cols, float eps,
                    cudaStream_t stream) {
            return fn(static_cast<const float*>(x), static_cast<const float*>(w), static_cast<float*>(y), rows, cols,
                      eps, stream);
        };
    }
    return typed_entry(s.table<api::StridedTable>(), dtype, [](auto fn) { return typed_rows_fn(fn); });
}

GpuCall rows_call(const RowsCase& c, DType dtype, uint64_t seed, const RowsFn& fn) {
    GpuCall call;
    call.dtype = dtype;
    call.problem.rows = c.rows;
    call.problem.cols = c.cols;
    call.problem.eps = c.eps;
    call.problem.x = input_spec(c.kind, seed, 0, c.rows);
    call.problem.weight = weight_spec(seed);
    const int64_t xs = c.cols + c.x_pad, ys = c.cols + c.y_pad;
    call.tensors = {
        TensorRole{"x", Layout::rows_of(c.rows, c.cols, xs), c.x_mis, true, call.problem.x},
        TensorRole{"weight", Layout::rows_of(1, c.cols, c.cols), c.w_mis, true, call.problem.weight},
        TensorRole{"y", Layout::rows_of(c.rows, c.cols, ys), c.y_mis, false},
    };
    const int64_t rows = c.rows, cols = c.cols;
    const float eps = c.eps;
    call.launch = [fn, xs, ys, rows, cols, eps](const std::vector<void*>& d, cudaStream_t s) {
        return fn(d[0], xs, d[1], d[2], ys, rows, cols, eps, s);
    };
    return c.repeat_call ? repeated_at_same_addresses(std::move(call)) : call;
}

/// The layout rules of lessons 4 and 8 as cases, one property of one tensor argument at a time
/// (the others aligned and contiguous), so a vector width that forgets one pointer or one stride
/// fails by name: every pointer (weight included) one element past an aligned address; every
/// row stride a multiple of 2 but not of the vector width (cols + 2); every row stride padded by
/// a multiple of the vector width (cols + 16), whose padding must stay untouched. `prefix` names
/// the family ("layout", or "long_rows_layout" for rows longer than one block holds).
std::vector<RowsCase> layout_cases(const std::string& prefix, int64_t rows, int64_t cols) {
    struct Tensor {
        const char* name;
        int64_t RowsCase::*misalign;
        int64_t RowsCase::*pad;  ///< null: no stride argument (the weight)
    };
    const Tensor tensors[] = {{"x", &RowsCase::x_mis, &RowsCase::x_pad},
                              {"weight", &RowsCase::w_mis, nullptr},
                              {"y", &RowsCase::y_mis, &RowsCase::y_pad}};
    const std::string shape = std::to_string(rows) + " rows of " + std::to_string(cols) + ": ";
    std::vector<RowsCase> v;
    for (const Tensor& t : tensors) {
        RowsCase base{"", "", rows, cols};
        base.strided_only = true;
        RowsCase mis = base;
        mis.name = prefix + "_" + t.name + "_base_misaligned";
        mis.what = shape + t.name + " one element past an aligned address, every other pointer and stride aligned";
        mis.*t.misalign = 1;
        v.push_back(mis);
        if (!t.pad) continue;
        RowsCase odd = base;
        odd.name = prefix + "_" + t.name + "_stride_not_multiple_of_width";
        odd.what = shape + t.name + "'s row stride cols + 2, not a multiple of the vector width; the rest aligned";
        odd.*t.pad = 2;
        v.push_back(odd);
        RowsCase padded = base;
        padded.name = prefix + "_" + t.name + "_rows_padded";
        padded.what = shape + t.name + "'s rows padded to cols + 16 (full vectors allowed); the padding stays untouched";
        padded.*t.pad = 16;
        v.push_back(padded);
    }
    return v;
}

std::vector<RowsCase> row_cases() {
    const InputKind zero = InputKind::zero_rows, nan = InputKind::nan_row, huge = InputKind::huge, small = InputKind::small;
    std::vector<RowsCase> v = {
        {"rows_zero", "rows = 0 returns success and launches nothing", 0, 1024},
        {"one_row", "a single row", 1, 4096},
        {"many_rows_gt_65535", "70001 rows: more than gridDim.y or a 16-bit count can hold", 70001, 136},
        {"cols_1", "rows of one element", 257, 1},
        // Past 2^20 rows a grid capped anywhere up to 2^20 blocks (lesson 3's one block per row) or
        // 65536 blocks of 8 rows (lesson 2's) makes its blocks normalise a second row: the row loop runs,
        // and a block's shared memory holds the next row's partial sums only after every warp has read
        // this row's. The typed lessons' grids hold what the GPU runs at once, so 70001 rows loop there.
        {"many_rows_gt_2pow20", "1048579 rows of 3 columns: past 2^20 rows a capped grid loops, each block "
         "normalising several rows with the same shared memory", 1048579, 3, InputKind::normal, 0, 0, 0, 0, 0, 1e-5f,
         2, false, false, 0, false, true},
        {"cols_lt_warp", "19 columns: fewer than a warp's lanes", 1000, 19},
        {"prime_cols", "4099 columns: prime, no vector width or block size divides it", 513, 4099},
        {"odd_cols", "1001 columns", 300, 1001},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops to 4", 400, 4100, InputKind::normal, 0, 0,
         0, 0, 0, 1e-5f, 2, true},
        {"cols_gt_1024xwidth", "9000 columns: more than 1024 threads x vector width", 200, 9000},
        {"cols_max_65536", "65536 columns, the contract's longest row (fp32 sum drift stays in tolerance)", 64, 65536},
        {"all_zero_rows", "every other row is all zeros: outputs 0, not NaN", 1000, 1024, zero},
        {"nan_row_isolated", "a NaN in row 37 must not leak into other rows", 100, 2048, nan},
        {"eps_inside_sqrt", "small values with eps = 1e-2: eps belongs inside the square root", 300, 512, small, 0, 0,
         0, 0, 0, 1e-2f},
        {"misaligned_base", "x, weight and y each start one element past an aligned address", 300, 4096,
         InputKind::normal, 0, 0, 1, 1, 1, 1e-5f, 2, true},
        {"misaligned_stride", "odd row strides (cols + 1 for x, cols + 3 for y)", 300, 2048, InputKind::normal, 1, 3, 0,
         0, 0, 1e-5f, 2, true},
        {"row_stride_gt_cols", "row strides larger than cols; the padding must stay untouched", 300, 1000,
         InputKind::normal, 24, 64, 0, 0, 0, 1e-5f, 2, true},
        {"fp16_huge_values", "fp16 values near 65504: squares overflow an fp16 accumulator", 256, 4096, huge, 0, 0, 0,
         0, 0, 1e-5f, 2, true, true},
        {"past_2pow31_elements", "rows x stride past 2^31 elements: 64-bit indexing", 32769, 65536, InputKind::normal,
         0, 0, 0, 0, 0, 1e-5f, 1},
        {"past_2pow31_elements_short_rows",
         "8388609 rows of 256: rows x cols past 2^31 elements in rows a short-row path takes (fp16)", 8388609, 256,
         InputKind::normal, 0, 0, 0, 0, 0, 1e-5f, 1, false, true},
        {"short_rows_partial_block", "1001 rows of 256 columns: a block of several rows ends part-way", 1001, 256},
        {"short_rows_strided", "1003 rows of 512 columns with padded row strides", 1003, 512, InputKind::normal, 8, 24,
         0, 0, 0, 1e-5f, 2, true},
        // The vector width must follow cols even where every stride and pointer would allow more:
        // a last, partial vector stored whole lands in the padding or the guard zone.
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 4095},
        {"padded_stride_partial_vector",
         "4095 columns in rows padded to 4096 (x) and 4160 (y) elements: the strides allow full vectors, cols does not",
         300, 4095, InputKind::normal, 1, 65, 0, 0, 0, 1e-5f, 2, true},
        {"misaligned_weight_only", "x and y aligned, weight one element off: each pointer limits the width",
         300, 4096, InputKind::normal, 0, 0, 0, 1, 0, 1e-5f, 2, true},
    };
    RowsCase repeat{"repeat_new_inputs_same_addresses",
                    "called twice on the same tensors, new values written between the calls: the second call's "
                    "outputs must be those of the new inputs",
                    300, 4096};
    repeat.repeat_call = true;
    v.push_back(repeat);
    for (const RowsCase& c : layout_cases("layout", 96, 2048)) v.push_back(c);
    // Rows of 256 and 512 columns are a warp's 32 lanes x 1, 2 vectors of 8 or 4: the lengths a kernel most
    // likely gives a contiguous fast path, whose strides must then be cols. Padded rows at those lengths.
    for (int64_t cols : {256, 512}) {
        for (const char* t : {"x", "y"}) {
            RowsCase padded{std::string(t) + "_rows_padded_cols_" + std::to_string(cols),
                            std::to_string(cols) + " columns in rows of " + t + " padded to cols + 16, the other tensor "
                            "dense: a path for rows of this length must still use the row stride",
                            67, cols};
            padded.strided_only = true;
            (t[0] == 'x' ? padded.x_pad : padded.y_pad) = 16;
            v.push_back(padded);
        }
    }
    return v;
}

/// Long-row cases (lesson 8: rows up to 262144 columns).
std::vector<RowsCase> long_row_cases() {
    RowsCase base{"", "", 0, 0};
    std::vector<RowsCase> v;
    for (auto [name, rows, cols] : {std::tuple{"cols_65536", 64, 65536}, std::tuple{"cols_131072", 32, 131072},
                                    std::tuple{"cols_262144", 16, 262144}, std::tuple{"cols_262143_prime_tail", 16, 262139}}) {
        RowsCase c = base;
        c.name = name;
        c.what = "rows of " + std::to_string(cols) + " columns, longer than one block holds";
        c.rows = rows;
        c.cols = cols;
        v.push_back(c);
    }
    RowsCase mis = v.back();
    mis.name = "cols_262144_misaligned";
    mis.what = "262144 columns, every pointer one element off alignment and odd strides";
    mis.cols = 262144;
    mis.x_mis = mis.w_mis = mis.y_mis = 1;
    mis.x_pad = 1;
    mis.y_pad = 3;
    v.push_back(mis);
    // The layout rules again where a row is split over several blocks (131072 columns: a cluster of
    // 4 for 16-bit types), whose code path chooses and uses its own vector width.
    for (const RowsCase& c : layout_cases("long_rows_layout", 3, 131072)) v.push_back(c);
    return v;
}

}  // namespace

LessonPlan rows_plan(const RowsLesson& lesson, const Submission& student, const Submission& reference,
                     const PlanOptions& opt) {
    LessonPlan plan;
    const bool typed = lesson.typed;
    const std::vector<DType> dtypes = typed ? std::vector<DType>{DType::f32, DType::f16, DType::bf16}
                                            : std::vector<DType>{DType::f32};
    std::vector<RowsCase> cases = row_cases();
    if (lesson.long_rows) {
        const auto more = long_row_cases();
        cases.insert(cases.end(), more.begin(), more.end());
    }
    if (lesson.own_cases) {
        const auto own = lesson.own_cases();
        cases.insert(cases.end(), own.begin(), own.end());
    }
    for (const RowsCase& c : cases) {
        if (c.strided_only && !typed) continue;
        if (c.untyped_only && typed) continue;
        for (DType t : dtypes) {
            if (c.f16_only && t != DType::f16) continue;
            // One element type is enough for the largest case; it is about indexing, not arithmetic.
            if (c.name == "past_2pow31_elements" && typed && t != DType::f16) continue;
            const std::string name = typed ? c.name + "_" + dtype_name(t) : c.name;
            const RowsFn fn = rows_fn(lesson, student, t);
            const bool large = c.rows * (c.cols + std::max(c.x_pad, c.y_pad)) > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(
                name, c.what, [c, t, fn](uint64_t seed) { return rows_call(c, t, seed, fn); }, c.repeats, large));
        }
    }
    for (const RowsBenchSpec& b : lesson.bench(opt.full_bench)) {
        RowsCase c{"", "", b.rows, b.cols};
        c.repeats = 1;
        const std::string shape = std::to_string(b.rows) + "x" + std::to_string(b.cols);
        const RowsFn s = rows_fn(lesson, student, b.dtype), r = rows_fn(lesson, reference, b.dtype);
        const DType t = b.dtype;
        RowsCase checked = c;
        checked.rows = checked_bench_rows(b.rows, b.cols, opt);
        plan.cases.push_back(make_gpu_case("bench_" + shape + "_" + dtype_name(t), checked_bench_what(b.rows, checked.rows),
                                           [checked, t, s](uint64_t seed) { return rows_call(checked, t, seed, s); }, 1,
                                           true));
        plan.bench.push_back(make_bench_shape(shape, t, [c, t, s](uint64_t seed) { return rows_call(c, t, seed, s); },
                                              [c, t, r](uint64_t seed) { return rows_call(c, t, seed, r); }));
    }
    return plan;
}

}  // namespace workbook
