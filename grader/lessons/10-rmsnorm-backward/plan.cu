/// @file lesson_backward.cu
/// @brief Cases and benchmark shapes of lesson 10, the RMSNorm backward pass.
///
/// A call has seven tensors: dy, x, weight and the forward's saved rstd (inputs), dx and
/// dweight (outputs), and the workspace the submission asked for (scratch, poisoned before
/// every launch, its guard zones checked). The saved rstd is computed from x by the grader
/// (saved_rstd, with an eps the call is never told); dx and dweight are judged against the
/// fp64 oracle of backward_oracle.h.
///
/// The cases that lay out one tensor unlike the others are generated from a table of the
/// tensor arguments (kLayoutTable): for each, a base aligned only to its element size, and for
/// each strided one a row stride that is not a multiple of any vector width and padded rows.
/// contract_rules.json names the cases that check each rule of rmsnorm_backward.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "lessons/10-rmsnorm-backward/backward_checks.h"
#include "engine/buffer_hooks.h"
#include "engine/device_tensor.h"
#include "engine/gpu_case.h"
#include "engine/launch_guard.h"
#include "launch/launch_recorder.h"
#include "lessons/common/plan_helpers.h"
#include "workbook/cuda_check.h"
#include "lessons/10-rmsnorm-backward/api.h"

namespace workbook {
namespace {

/// The row strides of dy, x and dx, in elements.
struct Strides {
    int64_t dy, x, dx;
};

using BackwardCall = std::function<cudaError_t(const std::vector<void*>& d, size_t workspace_bytes, int64_t rows,
                                               int64_t cols, Strides strides, cudaStream_t stream)>;

/// One dtype's entry point and workspace query, type-erased.
struct Entry {
    BackwardCall call;
    api::WorkspaceFn workspace = nullptr;
};

template <typename T>
BackwardCall typed(api::BackwardFn<T> fn) {
    // Tensor order: dy, x, weight, rstd, dx, dweight, workspace.
    return [fn](const std::vector<void*>& d, size_t ws, int64_t rows, int64_t cols, Strides st, cudaStream_t s) {
        return fn(static_cast<const T*>(d[0]), st.dy, static_cast<const T*>(d[1]), st.x,
                  static_cast<const T*>(d[2]), static_cast<const float*>(d[3]), static_cast<T*>(d[4]), st.dx,
                  static_cast<float*>(d[5]), d[6], ws, rows, cols, s);
    };
}

Entry entry_of(const Submission& s, DType t) {
    const api::Lesson10& table = s.table<api::Lesson10>();
    Entry e;
    switch (t) {
        case DType::f16: e = {typed(table.f16), table.workspace_f16}; break;
        case DType::bf16: e = {typed(table.bf16), table.workspace_bf16}; break;
        default: e = {typed(table.f32), table.workspace_f32}; break;
    }
    return e;
}

/// What a case's inputs hold.
enum class Values {
    normal,       ///< dy and x uniform in [0, 2) with random signs
    zero_rows,    ///< every other row of dy and of x is zero
    zero_x_rows,  ///< every other row of x is zero, dy is not
    nan_dy,       ///< one NaN in dy (row 37, col 5)
    small_x,      ///< x below 0.01: the forward's eps is a large part of the saved rstd
    huge_dy,      ///< dy in [30000, 65504], the weight below 0.25 so that dx stays finite in fp16
};

/// The tensors of a call, in the order the entry point takes them (and GpuCall::tensors holds them).
enum TensorIndex : int { kDy, kX, kWeight, kRstd, kDx, kDweight, kWorkspace };

struct BackCase {
    std::string name, what;
    int64_t rows, cols;
    int64_t stride = 0;  ///< row stride of dy, x and dx (0: cols)
    Values values = Values::normal;
    float eps = 1e-5f;   ///< the forward's eps, inside the saved rstd
    int64_t misalign = 0;  ///< every tensor but the workspace this many elements past a 256-byte boundary
    bool f16_only = false;
    int repeats = 2;
    int identical_reruns = 0;
    /// One tensor laid out unlike the others (the layout table's cases): its TensorIndex (-1:
    /// none), its own row stride (dy, x, dx; 0: the case's) and its own misalignment.
    int own_layout = -1;
    int64_t own_stride = 0;
    int64_t own_misalign = 0;
    /// A workspace twice the size the query asked for plus 256 bytes, workspace_bytes saying so.
    bool larger_workspace = false;
    /// The entry point called twice in order on the stream, on the same tensors and workspace:
    /// first on the first half of the rows, then on all of them (the second call is judged).
    bool call_twice = false;
    /// workspace = nullptr when the query asks for 0 bytes (the contract allows it).
    bool null_workspace_if_none = false;
};

/// The most workspace a case will allocate for a submission: past this the query is named as the fault.
size_t workspace_limit(int64_t rows, int64_t cols) {
    return (size_t(1) << 30) + static_cast<size_t>(rows) * static_cast<size_t>(cols) * sizeof(float);
}

BackwardProblem problem_of(const BackCase& c, uint64_t seed) {
    BackwardProblem p;
    p.rows = c.rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.x = input_spec(c.values == Values::zero_rows || c.values == Values::zero_x_rows ? InputKind::zero_rows
                     : c.values == Values::small_x                                  ? InputKind::small
                                                                                     : InputKind::normal,
                     seed, 0, c.rows);
    p.dy = input_spec(c.values == Values::zero_rows ? InputKind::zero_rows
                      : c.values == Values::nan_dy  ? InputKind::nan_row
                      : c.values == Values::huge_dy ? InputKind::huge
                                                    : InputKind::normal,
                      seed, 1, c.rows);
    p.weight = weight_spec(seed);
    if (c.values == Values::huge_dy) {
        p.weight.lo = 0.0625f;
        p.weight.hi = 0.25f;
    }
    return p;
}

GpuCall backward_call(const BackCase& c, DType t, uint64_t seed, const Entry& e) {
    GpuCall call;
    call.dtype = t;
    const BackwardProblem p = problem_of(c, seed);
    call.problem.rows = c.rows;
    call.problem.cols = c.cols;
    call.launches_when_empty = true;  // dweight = 0 is written even for rows = 0
    call.identical_reruns = c.identical_reruns;
    const int64_t stride = c.stride ? c.stride : c.cols;
    auto stride_of = [&](int i) { return c.own_layout == i && c.own_stride ? c.own_stride : stride; };
    auto misalign_of = [&](int i) { return c.own_layout == i ? c.own_misalign : c.misalign; };
    const Strides strides{stride_of(kDy), stride_of(kX), stride_of(kDx)};
    const Layout vec = Layout::rows_of(1, c.cols, c.cols);

    TensorRole dy{"dy", Layout::rows_of(c.rows, c.cols, strides.dy), misalign_of(kDy), true, p.dy};
    TensorRole x{"x", Layout::rows_of(c.rows, c.cols, strides.x), misalign_of(kX), true, p.x};
    TensorRole w{"weight", vec, misalign_of(kWeight), true, p.weight};
    TensorRole rstd{"rstd", Layout::rows_of(c.rows, 1, 1), misalign_of(kRstd), true};
    rstd.dtype = DType::f32;
    rstd.fill = [p, t](const DeviceTensor& d, cudaStream_t s) { fill_saved_rstd(d, p, t, s); };
    rstd.check_input = [p, t](const DeviceTensor& d, cudaStream_t s) { return check_saved_rstd_unchanged(d, p, t, s); };
    TensorRole dx{"dx", Layout::rows_of(c.rows, c.cols, strides.dx), misalign_of(kDx), false};
    dx.compare = [p, t](const DeviceTensor& d, cudaStream_t s) { return compare_dx(p, t, d, s); };
    TensorRole dw{"dweight", vec, misalign_of(kDweight), false};
    dw.dtype = DType::f32;
    dw.compare = [p, t](const DeviceTensor& d, cudaStream_t s) { return compare_dweight(p, t, d, s); };

    // The workspace, as large as the submission asked for (for both calls of a call_twice case;
    // larger_workspace: twice that and 256 bytes more), 256-byte aligned; its guard zone follows it.
    size_t asked = e.workspace ? e.workspace(c.rows, c.cols) : 0;
    if (c.call_twice && e.workspace) asked = std::max(asked, e.workspace(c.rows / 2, c.cols));
    const bool too_much = asked > workspace_limit(c.rows, c.cols);
    const size_t bytes = too_much ? 0 : c.larger_workspace ? 2 * asked + 256 : asked;
    const int64_t words = static_cast<int64_t>((bytes + 3) / 4);
    TensorRole ws{"workspace", Layout::rows_of(words > 0 ? 1 : 0, words > 0 ? words : 1, words > 0 ? words : 1), 0,
                  false};
    ws.dtype = DType::f32;
    ws.scratch = true;
    call.tensors = {dy, x, w, rstd, dx, dw, ws};

    if (too_much) {
        const std::string why = "rmsnorm_backward_workspace_bytes(" + std::to_string(c.rows) + ", " +
                                std::to_string(c.cols) + ") asked for " + std::to_string(asked) +
                                " bytes, more than 1 GiB beyond a float per element; nothing was launched";
        call.bind = [why](const std::vector<void*>&) { return why; };
    }
    const BackwardCall fn = e.call;
    const int64_t rows = c.rows, cols = c.cols;
    const bool twice = c.call_twice, null_ws = c.null_workspace_if_none && bytes == 0;
    call.launch = [fn, bytes, rows, cols, strides, twice, null_ws](const std::vector<void*>& given, cudaStream_t s) {
        std::vector<void*> d = given;
        if (null_ws) d[kWorkspace] = nullptr;
        if (twice) {
            const cudaError_t first = fn(d, bytes, rows / 2, cols, strides, s);
            if (first != cudaSuccess) return first;
        }
        return fn(d, bytes, rows, cols, strides, s);
    };
    return call;
}

/// The layout table: every tensor argument, and which layouts the contract allows it that its
/// neighbours need not share. Each row gives its cases (layout_cases): a base aligned only to
/// its element size (`any_alignment`; the workspace is 256-byte aligned by contract, and may be
/// larger than asked for instead), and for a tensor with a row stride of its own (`strided`) a
/// stride that is not a multiple of any vector width and padded rows. A single row with a
/// stride below cols is not among them: here every stride is >= cols.
struct TensorLayouts {
    int index;
    const char* name;
    bool strided;
    bool any_alignment;
};

const TensorLayouts kLayoutTable[] = {
    {kDy, "dy", true, true},          {kX, "x", true, true},       {kWeight, "weight", false, true},
    {kRstd, "rstd", false, true},     {kDx, "dx", true, true},     {kDweight, "dweight", false, true},
    {kWorkspace, "workspace", false, false},
};

/// The layout cases' shape: more rows than a decode batch (every other row misaligned by an odd
/// stride), rows of a length every vector width divides.
constexpr int64_t kLayoutRows = 260, kLayoutCols = 1024;

std::vector<BackCase> layout_cases() {
    const std::string cols = std::to_string(kLayoutCols), odd = std::to_string(kLayoutCols + 1),
                      padded = std::to_string(kLayoutCols + 64);
    std::vector<BackCase> v;
    for (const TensorLayouts& t : kLayoutTable) {
        const std::string n = t.name;
        if (t.any_alignment) {
            BackCase c{n + "_base_misaligned",
                       n + " alone one element past a 256-byte boundary (aligned to its element size only), every "
                           "other tensor aligned: its pointer alone must limit the vector width",
                       kLayoutRows, kLayoutCols};
            c.own_layout = t.index;
            c.own_misalign = 1;
            v.push_back(c);
        } else {
            BackCase c{n + "_larger_than_asked",
                       "a workspace twice the size rmsnorm_backward_workspace_bytes asked for, plus 256 bytes, and "
                       "workspace_bytes saying so: the contract asks for at least the size, so it must be accepted",
                       kLayoutRows, kLayoutCols};
            c.larger_workspace = true;
            v.push_back(c);
        }
        if (t.strided) {
            BackCase o{n + "_stride_not_multiple_of_width",
                       n + "'s row stride " + odd + " for rows of " + cols + " (every other row one element off), "
                           "every other stride " + cols + ": its stride alone must limit the vector width",
                       kLayoutRows, kLayoutCols};
            o.own_layout = t.index;
            o.own_stride = kLayoutCols + 1;
            v.push_back(o);
            BackCase pad{n + "_padded_rows",
                         n + "'s rows " + padded + " apart for " + cols + " columns, every other tensor dense: its own "
                             "stride addresses it" + (t.index == kDx ? ", and its padding stays untouched" : ""),
                         kLayoutRows, kLayoutCols};
            pad.own_layout = t.index;
            pad.own_stride = kLayoutCols + 64;
            v.push_back(pad);
        }
    }
    return v;
}

std::vector<BackCase> backward_cases() {
    const Values normal = Values::normal;
    std::vector<BackCase> v = {
        {"rows_zero", "rows = 0: dweight is all zeros (the sum of no rows) and nothing else is written", 0, 4096},
        {"one_row", "a single row: dweight is that row's dy * xhat", 1, 8192},
        {"many_rows_gt_65535", "70001 rows of 136", 70001, 136},
        {"short_rows", "1001 rows of 256: several rows per block, each with its own rstd", 1001, 256},
        {"cols_1", "rows of one element: xhat is almost +-1 and dx almost cancels", 257, 1},
        {"cols_lt_warp", "19 columns", 1000, 19},
        {"prime_cols", "4099 columns", 513, 4099},
        {"odd_cols", "1001 columns", 300, 1001},
        // More rows than the device holds row groups, so each group walks several rows, and a row
        // length that starts every row at another offset from a 16-byte boundary (8 in turn): a
        // kernel that gives a group's columns the same registers in every row must keep each
        // group to one offset.
        {"odd_cols_many_rows", "2001 rows of 2047: each row starts at its own offset, and a row group walks "
                               "several rows",
         2001, 2047},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops", 400, 4100},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 4095},
        {"one_row_cols_past_32_column_block", "one row of 2049: dweight's last column is one past a block of 32 "
         "columns and past the row's whole vectors", 1, 2049},
        {"padded_stride_partial_vector", "4095 columns in rows of 4160: strides allow 16 bytes, cols does not", 64,
         4095, 4160},
        {"misaligned_stride", "row stride 4097: every other row is misaligned", 200, 4096, 4097},
        {"row_stride_gt_cols", "rows of 1000 in a stride of 1536, dx's padding untouched", 300, 1000, 1536},
        {"cols_gt_1024xwidth", "9000 columns", 200, 9000},
        {"long_rows_32768", "32768 columns", 64, 32768},
        {"cols_max_65536", "65536 columns, the longest row", 64, 65536},
        {"cols_max_65536_many_rows", "1000 rows of 65536: every row group walks many long rows", 1000, 65536},
        {"misaligned_base", "every pointer but the workspace's one element past an aligned address", 300, 4096, 0,
         normal, 1e-5f, 1},
        {"all_zero_rows", "every other row of dy and x is zero: dx is 0 there, not NaN", 1000, 1024, 0,
         Values::zero_rows},
        {"zero_x_rows", "every other row of x is zero (rstd = 1/sqrt(eps)): there dx = rstd * dy * w", 1000, 1024, 0,
         Values::zero_x_rows},
        {"nan_row_isolated", "a NaN in dy at row 37, col 5: dx's row 37 and dweight[5] are NaN, nothing else", 100,
         2048, 0, Values::nan_dy},
        {"saved_rstd_large_eps", "x below 0.01, rstd saved with eps = 1e-2: the saved rstd is used as given", 200,
         2048, 0, Values::small_x, 1e-2f},
        {"fp16_huge_dy", "dy near 65504: sum(dy * w * xhat) overflows an fp16 accumulator", 256, 4096, 0,
         Values::huge_dy, 1e-5f, 0, true},
        {"column_sum_many_rows", "262147 rows of 64: each dweight is a sum of 262147 terms", 262147, 64},
        {"column_sum_1m_rows", "1048579 rows of 32: a column sum over a million rows", 1048579, 32},
        {"column_sum_many_groups", "20000 rows of 8192: many row groups, many partial sums per column", 20000, 8192},
        {"dweight_deterministic", "three calls on the same inputs: dx and dweight are the same bits every time",
         16384, 1024, 0, normal, 1e-5f, 0, false, 1, 2},
        {"dweight_deterministic_long_rows", "the same with rows of 32768", 512, 32768, 0, normal, 1e-5f, 0, false, 1,
         2},
        {"past_2pow31_elements", "rows x cols past 2^31 elements", 32769, 65536, 0, normal, 1e-5f, 0, true, 1},
    };
    BackCase shared{"workspace_shared_by_calls_in_order",
                    "two calls in order on the stream with one workspace and the same dx and dweight, the first on "
                    "the first 260 rows, the second on all 520: the second's outputs are judged (dweight is "
                    "overwritten, not added to, and nothing of the first call is trusted)",
                    520, 1024};
    shared.call_twice = true;
    v.push_back(shared);
    BackCase null_ws{"workspace_null_when_none_asked",
                     "rows = 0, where the query asks for no workspace: workspace = nullptr and workspace_bytes = 0 "
                     "are valid, and dweight is still zeroed", 0, 4096};
    null_ws.null_workspace_if_none = true;
    v.push_back(null_ws);
    for (const BackCase& c : layout_cases()) v.push_back(c);
    // dy alone misaligned: no vector width fits and the rows cannot be peeled alike, so they move one
    // element at a time, in rows longer than one block of such rows holds (8 elements a thread), and
    // more rows than the device holds row groups: a group walks several rows, and anything it does
    // for its next row (a prefetch asks for 16-byte aligned addresses) meets dy's misaligned rows.
    BackCase scalar_long{"dy_base_misaligned_long_rows",
                         "dy alone one element past a 256-byte boundary (aligned to its element size only) in 2000 "
                         "rows of 9000 columns: long rows that no vector width fits, each row group walking several",
                         2000, 9000};
    scalar_long.own_layout = kDy;
    scalar_long.own_misalign = 1;
    v.push_back(scalar_long);
    return v;
}

/// Calls with a workspace one byte short; `enqueued` says what the call left behind ("" if nothing).
/// In process a stream capture counts the operations it enqueued. Graded from outside (remote grading)
/// the call runs in another process, which a capture here would not see: dx and dweight are marked
/// before the call instead, and must still be marked after it.
cudaError_t call_one_byte_short(const Entry& e, const std::vector<void*>& d, size_t asked, int64_t rows, int64_t cols,
                                const DeviceTensor& dx, const DeviceTensor& dw, cudaStream_t stream,
                                std::string& enqueued) {
    if (remote_grading()) {
        for (const DeviceTensor* t : {&dx, &dw})
            WB_CUDA_CHECK(cudaMemsetAsync(t->base(), kMarkerByte, t->total_bytes(), stream));
        const cudaError_t got = e.call(d, asked - 1, rows, cols, Strides{cols, cols, cols}, stream);
        cudaGetLastError();
        WB_CUDA_CHECK(cudaDeviceSynchronize());
        size_t written = 0;
        for (const DeviceTensor* t : {&dx, &dw}) {
            std::vector<unsigned char> bytes(t->total_bytes());
            WB_CUDA_CHECK(cudaMemcpy(bytes.data(), t->base(), bytes.size(), cudaMemcpyDeviceToHost));
            for (unsigned char b : bytes) written += b != kMarkerByte;
        }
        if (written) enqueued = "work that wrote " + std::to_string(written) + " byte(s) of dx and dweight";
        return got;
    }
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t got = e.call(d, asked - 1, rows, cols, Strides{cols, cols, cols}, stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    size_t nodes = 0;
    if (ended == cudaSuccess && graph) cudaGraphGetNodes(graph, nullptr, &nodes);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    if (ended != cudaSuccess) enqueued = "work that broke the stream capture";
    else if (nodes != 0) enqueued = std::to_string(nodes) + " operation(s)";
    return got;
}

/// A workspace one byte short of what the query asked for: cudaErrorInvalidValue, nothing enqueued.
Case workspace_too_small_case(const Entry& e) {
    Case c;
    c.name = "error_workspace_too_small_f16";
    c.what = "workspace_bytes one below what rmsnorm_backward_workspace_bytes asked for";
    c.repeats = 1;
    c.run = [e](uint64_t, int) {
        const int64_t rows = 300, cols = 4096;
        const size_t asked = e.workspace ? e.workspace(rows, cols) : 0;
        if (asked == 0) return CaseOutcome::pass("the submission needs no workspace at this size");
        if (asked > workspace_limit(rows, cols))
            return CaseOutcome::fail("rmsnorm_backward_workspace_bytes(300, 4096) asked for " + std::to_string(asked) +
                                         " bytes, more than 1 GiB beyond a float per element",
                                     FailureCause::launch);
        const Layout act = Layout::rows_of(rows, cols, cols), vec = Layout::rows_of(1, cols, cols);
        DeviceTensor dy(DType::f16, act), x(DType::f16, act), w(DType::f16, vec), rstd(DType::f32, Layout::rows_of(rows, 1, 1)),
            dx(DType::f16, act), dw(DType::f32, vec),
            ws(DType::f32, Layout::rows_of(1, static_cast<int64_t>((asked + 3) / 4), static_cast<int64_t>((asked + 3) / 4)));
        const std::vector<void*> d = {dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), ws.data()};
        std::string enqueued;
        const cudaError_t got = call_one_byte_short(e, d, asked, rows, cols, dx, dw, grader_stream(), enqueued);
        const std::string setting = "with workspace_bytes = " + std::to_string(asked - 1) + ", one below the " +
                                    std::to_string(asked) + " bytes rmsnorm_backward_workspace_bytes(300, 4096) asked for";
        if (got != cudaErrorInvalidValue)
            return CaseOutcome::fail(std::string("rmsnorm_backward returned ") + cudaGetErrorName(got) + " " + setting +
                                         "; a workspace that is too small must return cudaErrorInvalidValue and enqueue "
                                         "nothing",
                                     FailureCause::launch);
        if (!enqueued.empty())
            return CaseOutcome::fail("rmsnorm_backward returned cudaErrorInvalidValue " + setting + " but enqueued " +
                                         enqueued + "; it must enqueue nothing",
                                     FailureCause::launch);
        return CaseOutcome::pass();
    };
    return c;
}

/// The workspace query is host code: called twice inside a stream capture in global mode, it
/// launches nothing (the launches are recorded), allocates nothing and does not synchronise
/// (either ends the capture with an error), leaves no node in the graph, and gives the same answer
/// both times. Graded from outside (remote grading) the query runs in another process, which
/// neither the capture nor the recording here can see: only the answers are compared then.
Case workspace_query_case(const Entry& e, DType t) {
    Case c;
    c.name = std::string("workspace_query_host_only_") + dtype_name(t);
    c.what = "rmsnorm_backward_workspace_bytes(300, 4096) called twice inside a stream capture: no launch, no "
             "allocation, no synchronisation, the same answer both times";
    c.repeats = 1;
    c.run = [e](uint64_t, int) {
        const int64_t rows = 300, cols = 4096;
        if (!e.workspace) return CaseOutcome::fail("the submission exports no rmsnorm_backward_workspace_bytes",
                                                   FailureCause::launch);
        size_t first = 0, second = 0, launched = 0, nodes = 0;
        std::string broke;
        if (remote_grading()) {
            first = e.workspace(rows, cols);
            second = e.workspace(rows, cols);
        } else {
            cudaStream_t stream = grader_stream();
            WB_CUDA_CHECK(cudaStreamSynchronize(stream));
            cudaGraph_t graph = nullptr;
            cudaError_t ended;
            {
                LaunchRecording recording;
                WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
                first = e.workspace(rows, cols);
                second = e.workspace(rows, cols);
                ended = cudaStreamEndCapture(stream, &graph);
                recording.stop();
                launched = recording.launches().size();
            }
            if (ended == cudaSuccess && graph) cudaGraphGetNodes(graph, nullptr, &nodes);
            if (graph) cudaGraphDestroy(graph);
            if (ended != cudaSuccess)
                broke = std::string("the stream capture around it failed (") + cudaGetErrorName(ended) +
                        "): the query synchronised, allocated or enqueued work outside the capture";
            cudaGetLastError();
        }
        std::string problem;
        auto add = [&](const std::string& p) { problem += (problem.empty() ? "" : "; ") + p; };
        if (!broke.empty()) add(broke);
        if (launched) add("it launched " + std::to_string(launched) + " kernel(s)");
        if (nodes) add("it enqueued " + std::to_string(nodes) + " operation(s) on the stream");
        if (first != second)
            add("it answered " + std::to_string(first) + " bytes, then " + std::to_string(second) +
                " for the same rows and cols: the answer may depend only on T, rows, cols and the device");
        if (problem.empty()) return CaseOutcome::pass();
        return CaseOutcome::fail("rmsnorm_backward_workspace_bytes(300, 4096) must be host code that launches, "
                                 "allocates and synchronises nothing: " + problem,
                                 FailureCause::launch);
    };
    return c;
}

/// How the CPU emulator runs the cases it cannot run whole in reasonable time (the emulated
/// kernel and the grader's fp64 oracle, which rebuilds every input value from the seed several
/// times, cost it about a microsecond per element): fewer rows that still make the case's point,
/// or none (rows = 0) where the rows are the point. Every other case runs whole.
struct CpuForm {
    const char* name;
    int64_t rows;
    const char* why_not_run;  ///< rows = 0: why the GPU alone runs it
};

const CpuForm kCpuForms[] = {
    {"column_sum_1m_rows", 0,
     "a million rows is its point, and its 33554528 elements take the emulator about 20 s per dtype; the longest "
     "column sums it runs are column_sum_many_rows's (65539 rows there); the GPU grader runs this one"},
    // Still more rows than a grid's y dimension holds, and column sums of many terms per row group.
    {"column_sum_many_rows", 65539, nullptr},
    {"cols_max_65536_many_rows", 0,
     "several rows of 65536 per row group need some 20 million elements, about 8 s of the emulator's time "
     "per dtype; on the CPU, dweight_deterministic_long_rows walks several rows of 32768 per row group "
     "and cols_max_65536 checks the longest rows; the GPU grader runs this one"},
    {"dweight_deterministic", 4096, nullptr},
    // Still more rows than the reference's few-rows threshold (256): row groups walk several rows.
    {"dweight_deterministic_long_rows", 260, nullptr},
};

const CpuForm* cpu_form(const std::string& name) {
    for (const CpuForm& f : kCpuForms)
        if (name == f.name) return &f;
    return nullptr;
}

/// The case as the CPU emulator runs it (see kCpuForms), its description saying how it differs.
/// The determinism cases rerun once, not twice: the emulator walks a grid's blocks backwards at
/// every other launch of a kernel and draws its warps' order anew, so the rerun already sums in
/// another order.
BackCase on_cpu(const BackCase& c, std::string& what) {
    BackCase run = c;
    std::vector<std::string> changes;
    if (const CpuForm* f = cpu_form(c.name); f && f->rows > 0 && f->rows < c.rows) {
        run.rows = f->rows;
        changes.push_back("its first " + std::to_string(f->rows) + " of " + std::to_string(c.rows) + " rows");
    }
    if (run.identical_reruns > 1) {
        run.identical_reruns = 1;
        changes.push_back("two calls, not three: the emulator's second call takes the blocks and warps in other orders");
    }
    for (size_t i = 0; i < changes.size(); ++i) what += (i == 0 ? " (on the CPU emulator: " : "; ") + changes[i];
    if (!changes.empty()) what += ")";
    return run;
}

}  // namespace

static LessonPlan backward_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    plan.cases.push_back(workspace_too_small_case(entry_of(student, DType::f16)));
    for (DType t : {DType::f32, DType::f16, DType::bf16})
        plan.cases.push_back(workspace_query_case(entry_of(student, t), t));
    for (const BackCase& whole : backward_cases()) {
        std::string what = whole.what;
        const BackCase c = opt.cpu_emulator ? on_cpu(whole, what) : whole;
        const CpuForm* form = opt.cpu_emulator ? cpu_form(c.name) : nullptr;
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const Entry e = entry_of(student, t);
            const bool large = c.rows * c.cols > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(c.name + "_" + dtype_name(t), what,
                                               [c, t, e](uint64_t seed) { return backward_call(c, t, seed, e); },
                                               c.repeats, large));
            if (form && form->rows == 0) plan.cases.back().not_on_cpu = form->why_not_run;
            // Past 2^27 elements the emulator runs a case only on a sample of its blocks, and
            // dweight's column sums need every row.
            else if (opt.cpu_emulator && c.rows * c.cols > (int64_t(1) << 27))
                plan.cases.back().not_on_cpu = "the emulator runs a case this large only on a sample of its blocks, "
                                               "and dweight's column sums need every row; the GPU grader runs this one";
        }
    }
    // The gate: the issue's shapes in bf16 (32768 x 1024 up, and a decode batch), two in fp16.
    struct Shape {
        int64_t rows, cols;
        DType t;
    };
    std::vector<Shape> shapes = {{32768, 1024, DType::bf16}, {32768, 4096, DType::bf16}, {16384, 8192, DType::bf16},
                                 {4096, 32768, DType::bf16}, {4096, 65536, DType::bf16}, {128, 4096, DType::bf16},
                                 {32768, 4096, DType::f16},  {4096, 65536, DType::f16}};
    if (opt.full_bench) {
        for (int64_t c : {256, 2048}) shapes.push_back({32768, c, DType::bf16});
        shapes.push_back({8192, 16384, DType::bf16});
        shapes.push_back({16, 4096, DType::bf16});
        shapes.push_back({32768, 4095, DType::f16});
        shapes.push_back({16384, 4096, DType::f32});
    }
    for (const Shape& s : shapes) {
        const BackCase c{"", "", s.rows, s.cols};
        const std::string shape = std::to_string(s.rows) + "x" + std::to_string(s.cols);
        const Entry es = entry_of(student, s.t), er = entry_of(reference, s.t);
        const DType t = s.t;
        BackCase checked = c;
        checked.rows = checked_bench_rows(s.rows, s.cols, opt, false);  // dx and dweight: checks of its own
        plan.cases.push_back(make_gpu_case("bench_" + shape + "_" + dtype_name(t), checked_bench_what(s.rows, checked.rows),
                                           [checked, t, es](uint64_t seed) { return backward_call(checked, t, seed, es); },
                                           1, true));
        plan.bench.push_back(make_bench_shape(shape, t, [c, t, es](uint64_t seed) { return backward_call(c, t, seed, es); },
                                              [c, t, er](uint64_t seed) { return backward_call(c, t, seed, er); }));
    }
    plan.self_check = [] { return self_check_backward_oracle(grader_stream()); };
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(10, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::backward_plan(student, *reference, opt); })
