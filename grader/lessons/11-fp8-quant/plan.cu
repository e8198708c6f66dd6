/// @file lesson_fp8_quant.cu
/// @brief Cases and benchmark shapes of lesson 11, RMSNorm fused with per-row FP8 quantisation.
///
/// A call has two inputs (x, weight) and two outputs judged together by check_fp8_outputs: q,
/// the e4m3 bytes, and scale, one fp32 value per row. The cases are DESIGN §4's edge cases plus
/// the lesson's own: all-zero rows, rows whose values are e4m3 numbers (their amax exactly 448)
/// or midpoints between two of them, outliers that push the rest into e4m3's subnormals, huge
/// fp16 values, a clip that saturates (on the vector path and on the one-element path), a weight
/// of zeros (amax 0 though Σx² is not), the longest rows. The error cases call the entry point
/// with one invalid argument each and expect cudaErrorInvalidValue and no launch; the valid calls
/// beside them (eps = 0, a single row with a stride below cols, rows = 0 with null pointers) are
/// cases of their own (error_cases.h has both tables). The cases that lay out one tensor unlike
/// the others are generated from a table of the tensor arguments (kLayoutTable).
/// contract_rules.json names the cases that check each rule of rmsnorm_fp8.h.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lessons/11-fp8-quant/fp8_checks.h"
#include "lessons/11-fp8-quant/error_cases.h"
#include "engine/gpu_case.h"
#include "engine/launch_guard.h"
#include "launch/launch_recorder.h"
#include "lessons/common/plan_helpers.h"
#include "workbook/cuda_check.h"
#include "lessons/11-fp8-quant/api.h"

namespace workbook {
namespace {

/// The entry point with its element type erased.
using Fp8Fn = std::function<cudaError_t(const void* x, int64_t xs, const void* w, void* q, int64_t qs, float* scale,
                                        int64_t rows, int64_t cols, float eps, float clip, cudaStream_t stream)>;

template <typename T>
Fp8Fn typed_fn(api::Fp8QuantFn<T> fn) {
    return [fn](const void* x, int64_t xs, const void* w, void* q, int64_t qs, float* scale, int64_t rows,
                int64_t cols, float eps, float clip, cudaStream_t stream) {
        return fn(static_cast<const T*>(x), xs, static_cast<const T*>(w), static_cast<__nv_fp8_e4m3*>(q), qs, scale,
                  rows, cols, eps, clip, stream);
    };
}

Fp8Fn fp8_fn(const Submission& s, DType dtype) {
    return typed_entry(s.table<api::Lesson11>(), dtype, [](auto fn) { return typed_fn(fn); });
}

constexpr float kNoClip = std::numeric_limits<float>::infinity();

/// What a case's x holds, beyond the InputKinds every lesson shares.
enum class Values {
    plain,         ///< the case's InputKind
    e4m3_numbers,  ///< e4m3 numbers, each row's amax exactly ±448, weight ±1: q must equal x exactly
    e4m3_ties,     ///< midpoints between e4m3 neighbours, amax ±448, weight ±1: every q is a tie
    outliers,      ///< one element of 3000 per row: the rest quantise into e4m3's subnormals
    zero_weight,   ///< the weight all zeros: y and its amax are 0 while Σx² is not
};

struct Fp8Case {
    std::string name, what;
    int64_t rows, cols;
    InputKind kind = InputKind::normal;
    Values values = Values::plain;
    float clip = kNoClip;
    int64_t x_pad = 0, q_pad = 0;                 ///< row stride = cols + pad
    int64_t x_mis = 0, w_mis = 0, q_mis = 0;      ///< elements past an aligned address
    float eps = 1e-5f;
    bool f16_only = false;
    int repeats = 2;
    int64_t scale_mis = 0;                        ///< scale's first element this many floats past an aligned address
    /// The strides passed to the call when not the layout's (-1): a single row may have a stride
    /// below cols, which its layout cannot describe (the row is laid out dense).
    int64_t x_stride_arg = -1, q_stride_arg = -1;
};

GpuCall fp8_call(const Fp8Case& c, DType dtype, uint64_t seed, const Fp8Fn& fn) {
    GpuCall call;
    call.dtype = dtype;
    OracleProblem& p = call.problem;
    p.rows = c.rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.x = input_spec(c.kind, seed, 0, c.rows);
    p.weight = weight_spec(seed);
    if (c.values == Values::e4m3_numbers || c.values == Values::e4m3_ties) {
        p.x.e4m3_values = c.values == Values::e4m3_numbers ? 1 : 2;
        p.weight.lo = p.weight.hi = 1.0f;  // ±1: x · w stays on the grid
    } else if (c.values == Values::outliers) {
        p.x.outlier = 3000.0f;
    } else if (c.values == Values::zero_weight) {
        p.weight.lo = p.weight.hi = 0.0f;
    }
    const int64_t xs = c.cols + c.x_pad, qs = c.cols + c.q_pad;
    const int64_t x_arg = c.x_stride_arg >= 0 ? c.x_stride_arg : xs, q_arg = c.q_stride_arg >= 0 ? c.q_stride_arg : qs;
    TensorRole q{"q", Layout::rows_of(c.rows, c.cols, qs), c.q_mis, false};
    q.kind = OutputKind::external;
    q.dtype = DType::e4m3;
    TensorRole scale{"scale", Layout::rows_of(c.rows, 1, 1), c.scale_mis, false};
    scale.kind = OutputKind::external;
    scale.dtype = DType::f32;
    call.tensors = {
        TensorRole{"x", Layout::rows_of(c.rows, c.cols, xs), c.x_mis, true, p.x},
        TensorRole{"weight", Layout::rows_of(1, c.cols, c.cols), c.w_mis, true, p.weight},
        q,
        scale,
    };
    const int64_t rows = c.rows, cols = c.cols;
    const float eps = c.eps, clip = c.clip;
    call.launch = [fn, x_arg, q_arg, rows, cols, eps, clip](const std::vector<void*>& d, cudaStream_t s) {
        return fn(d[0], x_arg, d[1], d[2], q_arg, static_cast<float*>(d[3]), rows, cols, eps, clip, s);
    };
    Fp8Problem judged{p, static_cast<double>(clip), dtype};
    call.check = [judged](const std::vector<const DeviceTensor*>& t, cudaStream_t s) {
        return check_fp8_outputs(judged, *t[2], *t[3], s);
    };
    return call;
}

std::vector<Fp8Case> fp8_cases() {
    const InputKind normal = InputKind::normal;
    const Values plain = Values::plain;
    return {
        {"rows_zero", "rows = 0 returns success and launches nothing", 0, 1024},
        {"one_row", "a single row", 1, 8192},
        {"many_rows_gt_65535", "70001 rows: more than gridDim.y or a 16-bit count can hold", 70001, 136},
        {"cols_1", "rows of one element: every q is ±448", 257, 1},
        {"cols_lt_warp", "19 columns: fewer than a warp's lanes", 1000, 19},
        {"short_rows_partial_block", "1001 rows of 256: a block of several rows ends part-way (scale of the right row)",
         1001, 256},
        {"prime_cols", "4099 columns: no vector width or block size divides it", 513, 4099},
        {"odd_cols", "1001 columns", 300, 1001},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops to 4", 400, 4100},
        {"cols_gt_1024xwidth", "9000 columns: more than 1024 threads x vector width", 200, 9000},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 4095},
        {"padded_stride_partial_vector", "4095 columns in rows of 4096 (x) and 4160 (q): the strides allow full "
         "vectors, cols does not", 64, 4095, normal, plain, kNoClip, 1, 65},
        {"misaligned_stride", "odd row strides (cols + 1 for x, cols + 3 for q)", 300, 2048, normal, plain, kNoClip, 1, 3},
        {"row_stride_gt_cols", "rows of 1000 in strides of 1024 (x) and 1088 (q): the padding stays untouched", 300,
         1000, normal, plain, kNoClip, 24, 88},
        {"long_rows_32768", "32768 columns: fp32 rows beyond one block's registers", 64, 32768},
        {"cols_max_65536", "65536 columns, the longest row", 64, 65536},
        {"misaligned_base", "x, weight and q each one element past an aligned address", 300, 4096, normal, plain,
         kNoClip, 0, 0, 1, 1, 1},
        {"all_zero_rows", "every other row is zero: scale 0 and q 0, not NaN (no 0/0)", 1000, 1024, InputKind::zero_rows},
        {"all_zero_rows_long", "every other row of 32768 zeros", 32, 32768, InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in row 37 dequantises to NaN there and leaves the other rows intact", 100, 2048,
         InputKind::nan_row},
        {"eps_inside_sqrt", "values below 0.01 with eps = 1e-2: eps belongs inside the square root", 200, 2048,
         InputKind::small, plain, kNoClip, 0, 0, 0, 0, 0, 1e-2f},
        {"amax_on_fp8_grid", "every x an e4m3 number, each row's amax exactly 448, weight ±1: q must equal x exactly",
         500, 4096, normal, Values::e4m3_numbers},
        {"amax_on_fp8_grid_short", "the same in rows of 96, several rows per block", 2000, 96, normal,
         Values::e4m3_numbers},
        {"rounding_ties", "every x the midpoint of two e4m3 neighbours (amax 448): each q is one of the two", 500, 4096,
         normal, Values::e4m3_ties},
        {"outlier_per_row", "one element of 3000 per row: the others quantise into e4m3's subnormals", 1000, 4096,
         normal, Values::outliers},
        {"clip_saturates", "clip 2: the scale is 2/448 and every |y| past 2 saturates to ±448", 1000, 4096, normal,
         plain, 2.0f},
        {"clip_saturates_width_1_odd_cols", "clip 2 on rows of 1023: no vector width divides them, and on the "
         "one-element path too every |y| past 2 saturates to ±448", 260, 1023, normal, plain, 2.0f},
        {"clip_saturates_width_1_misaligned_x", "clip 2 with x one element off (vector width 1): every |y| past 2 "
         "saturates to ±448 on the one-element path", 260, 1024, normal, plain, 2.0f, 0, 0, 1},
        {"zero_weight_amax_zero", "x nonzero, the weight all zeros: y and its amax are 0 while the sum of squares is "
         "not, so scale 0 and q 0; the 0/0 guard must test the amax", 260, 1024, normal, Values::zero_weight},
        {"clip_above_amax", "clip 1e6, above every amax: no effect", 300, 4096, normal, plain, 1e6f},
        {"clip_below_one", "clip 0.5: a clip below 1 is as valid as any above 0 (scale 0.5/448)", 300, 4096, normal,
         plain, 0.5f},
        // 36000 columns: in 16-bit, more than 512 threads hold, so a row is split over a cluster whose second
        // block gets a part of its slice (4500 of 2 x 4096 vectors); in fp32, past what 1024 threads hold, the
        // streaming path, where a thread's last step ends inside the row (36000 / 4 - 8192 = 808 vectors).
        {"cols_36000_partial_slices", "rows of 36000: a row split unevenly over a cluster's blocks (16-bit) or "
         "streamed in steps the row's end cuts short (fp32)", 6, 36000},
        {"small_values_cols_36000", "values below 0.01 with eps = 1e-2 in rows of 36000: every |y| below 1, so "
         "the amax must start from 0 on every path", 6, 36000, InputKind::small, plain, kNoClip, 0, 0, 0, 0, 0, 1e-2f},
        // Misaligned rows at the lengths no other misaligned case reaches: x one element and q one byte off
        // (alike, so a kernel may peel the first few elements of each row), the weight aligned, so its
        // elements sit at another offset from x's. At 16383 columns 4095 whole fp32 vectors follow the
        // peeled ones; at 65535, the longest odd length, more than 4096 in every type.
        {"misaligned_base_long_rows", "rows of 16383 with x one element and q one byte past an aligned address, the "
         "weight aligned: long misaligned rows, the weight at another offset than x", 6, 16383, normal, plain, kNoClip,
         0, 0, 1, 0, 1},
        // More misaligned rows than an H200 holds blocks of the peeled kernel (132 SMs x 20 blocks of 64 threads):
        // on fast memory a grid of the blocks it holds walks them, several rows a block, each block keeping the
        // weight shifted for its rows' offset instead of shifting it for every row.
        {"misaligned_rows_resident_grid", "5400 rows of 521 with x one element and q one byte past an aligned "
         "address, the weight aligned: more peeled rows than the device holds blocks, several a block", 5400, 521,
         normal, plain, kNoClip, 0, 0, 1, 0, 1},
        {"misaligned_base_cols_max", "rows of 65535 with x one element and q one byte past an aligned address: the "
         "longest misaligned rows, more whole vectors than a kernel for shorter rows holds", 4, 65535, normal, plain,
         kNoClip, 0, 0, 1, 0, 1},
        {"small_values_misaligned_base", "values below 0.01 with eps = 1e-2, x, weight and q one element off: every "
         "|y| below 1 on the misaligned rows' path too, their first and last few elements included", 6, 4096,
         InputKind::small, plain, kNoClip, 0, 0, 1, 1, 1, 1e-2f},
        // 45000 fp32 columns are 11250 vectors: past what 1024 threads hold in registers, so a kernel streams
        // them, and a step of 4 x 1024 vectors leaves 3058 for the last, which ends inside a thread's third.
        {"streamed_rows_last_step_partial", "rows of 45000: in fp32 a row streamed in steps of 4096 vectors whose "
         "last (3058) ends part-way through a step", 3, 45000},
        {"clip_long_rows", "clip 1.5 on rows of 65536", 48, 65536, normal, plain, 1.5f},
        {"fp16_huge_values", "fp16 values near 65504: squares overflow an fp16 accumulator, x·w an fp16 product", 256,
         4096, InputKind::huge, plain, kNoClip, 0, 0, 0, 0, 0, 1e-5f, true},
        {"past_2pow31_elements", "rows x stride past 2^31 elements: 64-bit indexing", 32769, 65536, normal, plain,
         kNoClip, 0, 0, 0, 0, 0, 1e-5f, true, 1},
    };
}

/// The tensors of a call, in the order the entry point takes them.
enum TensorIndex : int { kX, kWeight, kQ, kScale };

/// The layout table: every tensor argument, and the layouts the contract allows it that the
/// others need not share. Each row gives its cases (layout_cases): a base aligned only to its
/// element size (q's is one byte), and for a tensor with a row stride (`strided`) a stride that
/// is not a multiple of any vector width and padded rows. Its single row with a stride below
/// cols, a boundary of the stride's validation, is in valid_boundary_calls (error_cases.h).
struct TensorLayouts {
    int index;
    const char* name;
    bool strided;
};

const TensorLayouts kLayoutTable[] = {
    {kX, "x", true}, {kWeight, "weight", false}, {kQ, "q", true}, {kScale, "scale", false}};

/// The layout cases' shape: more rows than a decode batch (every other row misaligned by an odd
/// stride), rows of a length every vector width divides.
constexpr int64_t kLayoutRows = 260, kLayoutCols = 1024;

std::vector<Fp8Case> layout_cases() {
    const std::string cols = std::to_string(kLayoutCols), odd = std::to_string(kLayoutCols + 1),
                      padded = std::to_string(kLayoutCols + 64);
    std::vector<Fp8Case> v;
    for (const TensorLayouts& t : kLayoutTable) {
        const std::string n = t.name;
        Fp8Case mis{n + "_base_misaligned",
                    n + " alone one element past a 256-byte boundary (aligned to its element size only" +
                        (t.index == kQ ? ", one byte" : "") +
                        "), every other tensor aligned: its pointer alone must limit the vector width",
                    kLayoutRows, kLayoutCols};
        int64_t* own[] = {&mis.x_mis, &mis.w_mis, &mis.q_mis, &mis.scale_mis};
        *own[t.index] = 1;
        v.push_back(mis);
        if (!t.strided) continue;
        Fp8Case o{n + "_stride_not_multiple_of_width",
                  n + "'s row stride " + odd + " for rows of " + cols + " (every other row one element off), the "
                      "other stride " + cols + ": its stride alone must limit the vector width",
                  kLayoutRows, kLayoutCols};
        (t.index == kX ? o.x_pad : o.q_pad) = 1;
        v.push_back(o);
        Fp8Case pad{n + "_padded_rows",
                    n + "'s rows " + padded + " apart for " + cols + " columns, the other tensor dense: its own stride "
                        "addresses it" + (t.index == kQ ? ", and its padding stays untouched" : ""),
                    kLayoutRows, kLayoutCols};
        (t.index == kX ? pad.x_pad : pad.q_pad) = 64;
        v.push_back(pad);
    }
    return v;
}

/// A valid call of valid_boundary_calls with rows > 0 as a case whose outputs are checked. A
/// stride below cols (one row) is passed to the call; the row itself is laid out dense.
Fp8Case boundary_case(const fp8::ErrorCase& e) {
    Fp8Case c{e.name, e.what, e.rows, e.cols};
    c.eps = e.eps;
    c.clip = e.clip;
    if (e.x_stride >= e.cols) c.x_pad = e.x_stride - e.cols;
    else c.x_stride_arg = e.x_stride;
    if (e.q_stride >= e.cols) c.q_pad = e.q_stride - e.cols;
    else c.q_stride_arg = e.q_stride;
    return c;
}

/// Calls the entry point with the table's arguments on buffers large enough for any kernel it
/// might wrongly launch, and expects `expected` with nothing launched: cudaErrorInvalidValue for
/// an invalid call, cudaSuccess for a valid one with no rows.
Case make_error_case(const fp8::ErrorCase& e, const Fp8Fn& fn, cudaError_t expected = cudaErrorInvalidValue) {
    Case c;
    c.name = e.name;
    const std::string kind = expected == cudaErrorInvalidValue ? "an invalid call (" : "a valid call (";
    c.what = kind + e.what + ") returns " + cudaGetErrorName(expected) + " and launches nothing";
    c.repeats = 1;
    c.run = [e, fn, expected, kind](uint64_t, int) {
        const size_t bytes = size_t(8) << 20;
        void *x = nullptr, *w = nullptr, *q = nullptr, *s = nullptr;
        WB_CUDA_CHECK(cudaMalloc(&x, bytes));
        WB_CUDA_CHECK(cudaMalloc(&w, bytes));
        WB_CUDA_CHECK(cudaMalloc(&q, bytes));
        WB_CUDA_CHECK(cudaMalloc(&s, bytes));
        cudaStream_t stream = grader_stream();
        cudaError_t got;
        size_t launched;
        {
            LaunchRecording recording;
            got = fn(e.null_x ? nullptr : x, e.x_stride, e.null_weight ? nullptr : w, e.null_q ? nullptr : q,
                     e.q_stride, e.null_scale ? nullptr : static_cast<float*>(s), e.rows, e.cols, e.eps, e.clip,
                     stream);
            recording.stop();
            launched = recording.launches().size();
        }
        const std::string waited = wait_with_watchdog(stream, e.name);
        cudaGetLastError();
        for (void* p : {x, w, q, s}) cudaFree(p);
        std::string problem;
        if (got != expected)
            problem = kind + e.what + ") returned " + cudaGetErrorName(got) + "; the contract asks for " +
                      cudaGetErrorName(expected);
        if (launched > 0)
            problem += std::string(problem.empty() ? "" : "; ") + kind + e.what + ") launched " +
                       std::to_string(launched) + " kernel(s); it must launch nothing";
        if (!waited.empty()) problem += std::string(problem.empty() ? "" : "; ") + "the stream then failed: " + waited;
        return problem.empty() ? CaseOutcome::pass() : CaseOutcome::fail(problem, FailureCause::launch);
    };
    return c;
}

struct BenchSpec {
    int64_t rows, cols;
    DType dtype;
};

/// The gate: the shapes the issue names (bf16), one fp16 and one fp32 shape; --full-bench adds
/// the rest of the seed table.
std::vector<BenchSpec> bench_specs(bool full) {
    const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
    std::vector<BenchSpec> v = {{32768, 1024, bf16}, {32768, 4096, bf16}, {16384, 8192, bf16}, {4096, 32768, bf16},
                                {4096, 65536, bf16}, {128, 4096, bf16},   {16384, 8192, f16},  {16384, 4096, f32}};
    if (full) {
        for (int64_t c : {256, 512, 2048, 6144}) v.push_back({32768, c, bf16});
        v.push_back({8192, 16384, bf16});
        for (int64_t c : {8192, 16384}) v.push_back({4096, c, bf16});
        v.push_back({8192, 8192, bf16});
        v.push_back({16384, 16384, bf16});
        for (int64_t r : {1, 16}) v.push_back({r, 4096, bf16});
        for (int64_t c : {4095, 5120, 7168}) v.push_back({16384, c, bf16});
        v.push_back({32768, 4096, f16});
    }
    return v;
}

}  // namespace

static LessonPlan fp8_quant_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    for (const fp8::ErrorCase& e : fp8::error_cases())
        plan.cases.push_back(make_error_case(e, fp8_fn(student, DType::bf16)));
    std::vector<Fp8Case> cases = fp8_cases();
    for (const fp8::ErrorCase& e : fp8::valid_boundary_calls()) {
        if (e.rows == 0) plan.cases.push_back(make_error_case(e, fp8_fn(student, DType::bf16), cudaSuccess));
        else cases.push_back(boundary_case(e));
    }
    for (const Fp8Case& c : layout_cases()) cases.push_back(c);
    for (const Fp8Case& c : cases) {
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const Fp8Fn fn = fp8_fn(student, t);
            const bool large = c.rows * (c.cols + std::max(c.x_pad, c.q_pad)) > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(c.name + "_" + dtype_name(t), c.what,
                                               [c, t, fn](uint64_t seed) { return fp8_call(c, t, seed, fn); },
                                               c.repeats, large));
            // The emulator runs a case this large only on a sample of its blocks; q and scale are
            // judged by a check of their own that reads every row.
            if (opt.cpu_emulator && c.rows * (c.cols + c.x_pad) > (int64_t(1) << 27))
                plan.cases.back().not_on_cpu =
                    "the emulator runs a case this large only on a sample of its blocks, and q and scale are judged "
                    "by a check that reads every row; the GPU grader runs this one";
        }
    }
    for (const BenchSpec& b : bench_specs(opt.full_bench)) {
        Fp8Case c{"", "", b.rows, b.cols};
        c.repeats = 1;
        const std::string shape = std::to_string(b.rows) + "x" + std::to_string(b.cols);
        const Fp8Fn s = fp8_fn(student, b.dtype), r = fp8_fn(reference, b.dtype);
        const DType t = b.dtype;
        Fp8Case checked = c;
        checked.rows = checked_bench_rows(b.rows, b.cols, opt, false);  // q and scale: a check of its own
        plan.cases.push_back(make_gpu_case("bench_" + shape + "_" + dtype_name(t),
                                           checked_bench_what(b.rows, checked.rows),
                                           [checked, t, s](uint64_t seed) { return fp8_call(checked, t, seed, s); }, 1,
                                           true));
        plan.bench.push_back(make_bench_shape(shape, t, [c, t, s](uint64_t seed) { return fp8_call(c, t, seed, s); },
                                              [c, t, r](uint64_t seed) { return fp8_call(c, t, seed, r); }));
    }
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(11, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::fp8_quant_plan(student, *reference, opt); })
