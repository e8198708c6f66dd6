/// @file lesson_production.cu
/// @brief Cases and benchmark shapes of lesson 9, the production norm behind a descriptor.
///
/// A call has up to seven tensors: x, residual, weight, bias (inputs) and y, residual_out, rstd
/// (outputs); which ones are present, the mode, the parameters' dtypes and the layout are the
/// case's options. Each GPU case creates a descriptor on the case's real tensors (before the
/// launch, outside the graph capture), launches it, and checks every output against the fp64
/// oracle. The error-code cases only call norm_create, on problems with exactly one fault (two
/// where they test the order of the checks). Layout cases are generated for every tensor
/// (layout_cases); contract_rules.json names the cases of each rule of the contract.
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/buffer_hooks.h"
#include "engine/gpu_case.h"
#include "engine/launch_guard.h"
#include "launch/launch_recorder.h"
#include "lessons/09-production-norm/api.h"
#include "lessons/09-production-norm/case_lists.h"
#include "lessons/09-production-norm/error_cases.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"

namespace workbook {
namespace {

l9::DataType contract_dtype(DType t) {
    return t == DType::f16 ? l9::DataType::f16 : t == DType::bf16 ? l9::DataType::bf16 : l9::DataType::f32;
}

/// The contract's description of a tensor laid out as `layout` (2-D or 3-D by `heads`).
l9::TensorDesc describe_tensor(const Layout& layout, bool three_d, DType t) {
    l9::TensorDesc d;
    d.dtype = contract_dtype(t);
    if (three_d) {
        d.rank = 3;
        d.shape[0] = layout.heads ? layout.rows / layout.heads : 0;
        d.shape[1] = layout.heads;
        d.shape[2] = layout.cols;
        d.stride[0] = layout.outer_stride;
        d.stride[1] = layout.inner_stride;
        d.stride[2] = 1;
    } else {
        d.rank = 2;
        d.shape[0] = layout.rows;
        d.shape[1] = layout.cols;
        d.stride[0] = layout.outer_stride;
        d.stride[1] = 1;
    }
    return d;
}

/// A descriptor that is destroyed with the call that created it, and the caller's problem it was
/// created from, while the caller keeps it.
struct BoundDescriptor {
    const api::Lesson9* table = nullptr;
    l9::NormDescriptor* desc = nullptr;
    std::unique_ptr<l9::NormProblem> problem;
    ~BoundDescriptor() {
        if (desc) table->destroy(desc);
    }
};

/// The caller's problem reused for another call after norm_create: the other mode, another eps,
/// x and y exchanged, one row. A descriptor holds what create validated, so none of it may show.
void reuse_for_another_call(l9::NormProblem& p) {
    p.mode = p.mode == l9::NormMode::rms ? l9::NormMode::layer : l9::NormMode::rms;
    p.eps = 0.5f;
    std::swap(p.x.data, p.y.data);
    for (l9::TensorDesc* t : {&p.x, &p.residual, &p.y, &p.residual_out, &p.rstd})
        if (t->data && t->rank > 0) t->shape[0] = 1;
}

/// x's magnitude in the one column per row that raw_value makes an outlier.
constexpr float kOutlier = 30000.0f;

/// `s` with a seed derived from its own under which at least `want` of `rows` rows have their
/// outlier in column 0 (raw_value puts it in one column per row, hashed from the row): a row
/// whose first element is far from its mean, the worst shift for a one-pass variance.
ValueSpec with_outliers_in_column_0(ValueSpec s, int64_t rows, int64_t cols, int want) {
    const uint64_t base = s.seed;
    for (uint64_t i = 0; i < (uint64_t(1) << 22); ++i) {
        s.seed = i == 0 ? base : mix64(base ^ mix64(i));
        int hits = 0;
        for (int64_t r = 0; r < rows && hits < want; ++r) hits += std::fabs(raw_value(s, r, 0, cols)) == s.outlier;
        if (hits >= want) return s;
    }
    s.seed = base;
    return s;
}

/// "LayerNorm + bias + rstd + residual in/out, weight f32" for messages.
std::string options_text(unsigned o) {
    std::string s = (o & kLayer) ? "LayerNorm" : "RMSNorm";
    if (o & kBias) s += std::string(" + bias") + ((o & kBiasF32) ? " (f32)" : "");
    if (o & kRstd) s += " + rstd";
    if (o & kResidualOut) s += " + residual in/out";
    else if (o & kResidual) s += " + residual in";
    if (o & kWeightF32) s += ", weight f32";
    if (o & kYInPlace) s += ", y == x";
    if (o & kResInPlace) s += ", residual_out == residual";
    return s;
}

GpuCall prod_call(const ProdCase& c, DType dtype, uint64_t seed, const api::Lesson9* table) {
    GpuCall call;
    call.dtype = dtype;
    const bool three_d = c.heads > 0;
    const int64_t rows = rows_of(c);
    const int64_t heads = three_d ? c.heads : 1;
    const int64_t s1 = three_d ? (c.stride1 ? c.stride1 : c.cols) : c.cols;
    const int64_t s0 = c.stride0 ? c.stride0 : (three_d ? heads * s1 : c.cols);
    // An activation's layout: the case's strides, or its own where the case gives it some.
    auto act_of = [&](TensorId which) {
        const OwnLayout& o = c.own[which];
        const int64_t t1 = three_d && o.stride1 ? o.stride1 : s1;
        const int64_t t0 = o.stride0 ? o.stride0 : (o.stride1 ? heads * t1 : s0);
        return three_d ? Layout::heads_of(c.outer, heads, c.cols, t0, t1) : Layout::rows_of(rows, c.cols, t0);
    };
    auto misalign_of = [&](TensorId which) {
        if (c.own[which].misalign >= 0) return c.own[which].misalign;
        if (which == tWeight && c.weight_misalign) return c.weight_misalign;
        return which == tRstd ? int64_t(0) : c.misalign;
    };
    const Layout act = act_of(tX);
    const Layout dense = three_d ? Layout::heads_of(c.outer, heads, c.cols, heads * c.cols, c.cols)
                                 : Layout::rows_of(rows, c.cols, c.cols);
    const Layout vec = Layout::rows_of(1, c.cols, c.cols);
    const int64_t rstd_s0 = c.own[tRstd].stride0 ? c.own[tRstd].stride0 : heads;
    const Layout per_row = three_d ? Layout::heads_of(c.outer, heads, 1, rstd_s0, 1) : Layout::rows_of(rows, 1, 1);

    OracleProblem& p = call.problem;
    p.rows = rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.layer_norm = (c.opts & kLayer) != 0;
    p.x = input_spec(c.kind, seed, 0, rows);
    if (c.large_mean) make_large_mean(p.x, dtype);
    p.x.lo *= c.x_scale;
    p.x.hi *= c.x_scale;
    if (c.x_outlier != 0.0f) p.x.outlier = c.x_outlier;
    if (c.outlier_col0) {
        p.x.outlier = kOutlier;
        // As many such rows as a short search finds: 4 of short rows, 2 of long ones, 1 of a few very long.
        p.x = with_outliers_in_column_0(p.x, rows, c.cols, c.cols <= 1024 ? 4 : rows * 64 >= c.cols ? 2 : 1);
    }
    p.weight = weight_spec(seed);
    p.weight_f32 = (c.opts & kWeightF32) != 0;
    p.has_residual = (c.opts & kResidual) != 0;
    if (p.has_residual) {
        // The residual stays ordinary: in fp16_huge_values the sum must still fit in fp16.
        p.residual = input_spec(c.kind == InputKind::huge ? InputKind::normal : c.kind, seed, 1, rows);
        if (c.kind == InputKind::nan_row) p.residual.nan_row = -1;
    }
    p.has_bias = (c.opts & kBias) != 0;
    if (p.has_bias) {
        p.bias = weight_spec(seed);
        p.bias.tensor = 8;
        p.bias.lo = 0.0f;
        p.bias.hi = 1.0f;
        p.bias_f32 = (c.opts & kBiasF32) != 0;
    }

    // Tensor order: x, [residual], weight, [bias], y, [residual_out], [rstd].
    std::vector<TensorRole>& t = call.tensors;
    t.push_back(TensorRole{"x", act, misalign_of(tX), true, p.x});
    const int ix = 0;
    int ir = -1, ib = -1, iro = -1, irs = -1;
    if (p.has_residual) {
        ir = static_cast<int>(t.size());
        t.push_back(TensorRole{"residual", act_of(tResidual), misalign_of(tResidual), true, p.residual});
    }
    const int iw = static_cast<int>(t.size());
    t.push_back(TensorRole{"weight", vec, misalign_of(tWeight), true, p.weight});
    if (p.weight_f32) t.back().dtype = DType::f32;
    if (p.has_bias) {
        ib = static_cast<int>(t.size());
        t.push_back(TensorRole{"bias", vec, misalign_of(tBias), true, p.bias});
        if (p.bias_f32) t.back().dtype = DType::f32;
    }
    const int iy = static_cast<int>(t.size());
    TensorRole y{"y", (c.opts & kYInPlace) ? act : (c.opts & kYDense) ? dense : act_of(tY), misalign_of(tY), false};
    y.kind = OutputKind::normalised_scaled;
    y.extra_ulps = p.has_residual ? 1 : 0;  // the contract allows normalising the rounded residual_out
    y.alias_of = (c.opts & kYInPlace) ? ix : -1;
    t.push_back(y);
    if (c.opts & kResidualOut) {
        iro = static_cast<int>(t.size());
        TensorRole ro{"residual_out", (c.opts & kResInPlace) ? act_of(tResidual) : act_of(tResidualOut),
                      misalign_of(tResidualOut), false};
        ro.kind = OutputKind::rounded_sum;
        ro.alias_of = (c.opts & kResInPlace) ? ir : -1;
        t.push_back(ro);
    }
    if (c.opts & kRstd) {
        irs = static_cast<int>(t.size());
        TensorRole rs{"rstd", per_row, misalign_of(tRstd), false};
        rs.kind = OutputKind::rstd;
        rs.extra_ulps = p.has_residual ? 1 : 0;
        rs.dtype = DType::f32;
        t.push_back(rs);
    }

    // The problem as the contract describes it; data pointers are filled in by bind.
    l9::NormProblem np;
    np.mode = p.layer_norm ? l9::NormMode::layer : l9::NormMode::rms;
    np.eps = c.eps;
    auto describe = [&](int i, bool is_vector, bool is_rstd) {
        const Layout& l = t[static_cast<size_t>(i)].layout;
        const DType dt = call.dtype_of(static_cast<size_t>(i));
        if (is_vector) {
            l9::TensorDesc d;
            d.dtype = contract_dtype(dt);
            d.rank = 1;
            d.shape[0] = c.cols;
            d.stride[0] = 1;
            return d;
        }
        if (is_rstd) {
            l9::TensorDesc d;
            d.dtype = l9::DataType::f32;
            d.rank = three_d ? 2 : 1;
            d.shape[0] = three_d ? c.outer : rows;
            d.shape[1] = three_d ? heads : 0;
            d.stride[0] = three_d ? rstd_s0 : 1;
            d.stride[1] = three_d ? 1 : 0;
            return d;
        }
        return describe_tensor(l, three_d, dt);
    };
    np.x = describe(ix, false, false);
    np.weight = describe(iw, true, false);
    np.y = describe(iy, false, false);
    if (ir >= 0) np.residual = describe(ir, false, false);
    if (ib >= 0) np.bias = describe(ib, true, false);
    if (iro >= 0) np.residual_out = describe(iro, false, false);
    if (irs >= 0) np.rstd = describe(irs, false, true);

    auto bound = std::make_shared<BoundDescriptor>();
    bound->table = table;
    const std::string label = options_text(c.opts);
    const AfterCreate after = c.after_create;
    call.bind = [np, bound, ix, ir, iw, ib, iy, iro, irs, label, after](const std::vector<void*>& d) -> std::string {
        // The caller's problem, in memory of its own: after create the caller may change or free it.
        auto caller = std::make_unique<l9::NormProblem>(np);
        l9::NormProblem& q = *caller;
        q.x.data = d[ix];
        q.weight.data = d[iw];
        q.y.data = d[iy];
        if (ir >= 0) q.residual.data = d[ir];
        if (ib >= 0) q.bias.data = d[ib];
        if (iro >= 0) q.residual_out.data = d[iro];
        if (irs >= 0) q.rstd.data = d[irs];
        l9::NormDescriptor* desc = nullptr;
        const l9::Status st = bound->table->create(q, &desc);
        if (st != l9::Status::success)
            return std::string("norm_create refused a valid problem (") + label + ") with Status::" +
                   l9::status_name(st) + "; nothing was launched";
        if (!desc) return "norm_create returned success but no descriptor (*out is null); nothing was launched";
        bound->desc = desc;
        switch (after) {
            case AfterCreate::keep: bound->problem = std::move(caller); break;
            case AfterCreate::change:
                reuse_for_another_call(q);
                bound->problem = std::move(caller);
                break;
            case AfterCreate::free:
                q = l9::NormProblem{};
                caller.reset();
                break;
        }
        return "";
    };
    call.launch = [bound](const std::vector<void*>&, cudaStream_t s) {
        return bound->table->launch(bound->desc, s);
    };
    return c.relaunch ? repeated_at_same_addresses(std::move(call)) : call;
}


/// norm_destroy(nullptr) is a no-op.
Case destroy_null_case(const api::Lesson9* table) {
    Case c;
    c.name = "descriptor_destroy_accepts_null";
    c.what = "norm_destroy(nullptr) does nothing";
    c.repeats = 1;
    c.run = [table](uint64_t, int) {
        table->destroy(nullptr);
        return CaseOutcome::pass();
    };
    return c;
}

/// norm_create does no device work (no allocation, synchronisation, launch or copy), so it may be
/// called while a graph is captured: called inside a capture on the grader's stream, on fake
/// addresses, it leaves the capture intact and empty.
Case create_in_capture_case(const api::Lesson9* table) {
    Case c;
    c.name = "descriptor_create_inside_capture";
    c.what = "norm_create called while the grader's stream captures a graph: no device work, the capture intact";
    c.repeats = 1;
    c.run = [table](uint64_t, int) {
        const l9::NormProblem p = production::valid_problem();
        l9::NormDescriptor* desc = nullptr;
        if (remote_grading()) {  // create runs in another process, which no capture here sees
            const l9::Status st = table->create(p, &desc);
            if (desc) table->destroy(desc);
            return st == l9::Status::success
                       ? CaseOutcome::pass()
                       : CaseOutcome::fail(std::string("norm_create refused a valid problem with Status::") +
                                               l9::status_name(st),
                                           FailureCause::launch);
        }
        cudaStream_t stream = grader_stream();
        if (cudaStreamSynchronize(stream) != cudaSuccess) return CaseOutcome::fail("the grader's stream failed");
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) != cudaSuccess)
            return CaseOutcome::fail("the grader could not begin a capture");
        LaunchRecording recording;
        const l9::Status st = table->create(p, &desc);
        recording.stop();
        cudaGraph_t graph = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
        size_t nodes = 0;
        if (graph) {
            cudaGraphGetNodes(graph, nullptr, &nodes);
            cudaGraphDestroy(graph);
        }
        cudaGetLastError();
        if (desc) table->destroy(desc);
        std::string problem;
        if (st != l9::Status::success)
            problem = std::string("norm_create refused a valid problem with Status::") + l9::status_name(st) + ". ";
        if (ended != cudaSuccess)
            problem += std::string("norm_create broke the grader's graph capture (") + cudaGetErrorName(ended) +
                       "): it synchronised or used the device, which the contract rules out. ";
        else if (nodes != 0 || !recording.launches().empty())
            problem += "norm_create enqueued " + std::to_string(nodes) +
                       " operation(s) on the stream: it does no device work, the launch does. ";
        return problem.empty() ? CaseOutcome::pass() : CaseOutcome::fail(problem, FailureCause::launch);
    };
    return c;
}

Case make_error_case(const production::ErrorCase& e, const api::Lesson9* table) {
    Case c;
    c.name = e.name;
    c.what = e.what;
    c.repeats = 1;
    c.run = [e, table](uint64_t, int) {
        l9::NormProblem p = e.three_d ? production::valid_problem_3d() : production::valid_problem();
        e.mutate(p);
        l9::NormDescriptor* desc = reinterpret_cast<l9::NormDescriptor*>(uintptr_t(1));  // must be overwritten
        const l9::Status got = table->create(p, e.null_out ? nullptr : &desc);
        const bool ok_status = got == e.expected;
        std::string problem;
        if (!ok_status) {
            problem = std::string("norm_create returned Status::") + l9::status_name(got) + " for a problem with " +
                      e.what + "; expected Status::" + l9::status_name(e.expected);
        } else if (e.expected != l9::Status::success && !e.null_out && desc != nullptr) {
            problem = std::string("norm_create returned Status::") + l9::status_name(got) +
                      " but left *out pointing somewhere; a failed create sets *out to nullptr";
        }
        if (got == l9::Status::success && !e.null_out && desc != nullptr &&
            desc != reinterpret_cast<l9::NormDescriptor*>(uintptr_t(1)))
            table->destroy(desc);
        if (got == l9::Status::success && e.expected == l9::Status::success && !e.null_out &&
            (desc == nullptr || desc == reinterpret_cast<l9::NormDescriptor*>(uintptr_t(1))))
            problem = "norm_create returned success but no descriptor in *out";
        return problem.empty() ? CaseOutcome::pass() : CaseOutcome::fail(problem, FailureCause::launch);
    };
    return c;
}

}  // namespace

static LessonPlan production_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    const api::Lesson9* mine = &student.table<api::Lesson9>();
    const api::Lesson9* ref = &reference.table<api::Lesson9>();
    for (const production::ErrorCase& e : production::error_cases()) plan.cases.push_back(make_error_case(e, mine));
    plan.cases.push_back(destroy_null_case(mine));
    plan.cases.push_back(create_in_capture_case(mine));
    // The freed problem last: a descriptor that reads it at launch reads freed memory, and the
    // crash that may follow ends the run.
    std::vector<ProdCase> cases = prod_cases();
    for (std::vector<ProdCase> more :
         {rows_kernel_cases(), streamed_kernel_cases(), plan_boundary_cases(), parameter_dtype_cases(), layout_cases(),
          rule_cases()}) cases.insert(cases.end(), more.begin(), more.end());
    for (const ProdCase& c : cases) {
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const bool large = rows_of(c) * c.cols > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(c.name + "_" + dtype_name(t), c.what + " [" + options_text(c.opts) + "]",
                                               [c, t, mine](uint64_t seed) { return prod_call(c, t, seed, mine); },
                                               c.repeats, large));
        }
    }
    // The gate's shapes: every option the issue names at >= 64 MiB, fp16 and bf16, the short
    // and decode rows, the 3-D attention layout, and the longest LayerNorm rows.
    struct Shape {
        std::string label;
        ProdCase c;
        DType t;
    };
    const int64_t q128 = (32 + 2 * 8) * 128;
    auto shape = [](std::string prefix, int64_t rows, int64_t cols, unsigned opts, DType t) {
        return Shape{prefix + "_" + std::to_string(rows) + "x" + std::to_string(cols), {"", "", rows, 0, cols, opts}, t};
    };
    std::vector<Shape> shapes = {
        shape("plain", 32768, 4096, 0, DType::bf16),
        shape("bias_rstd", 32768, 4096, kBias | kRstd, DType::f16),
        shape("prenorm", 16384, 8192, kPreNorm, DType::bf16),
        shape("weight_f32", 32768, 4096, kWeightF32, DType::f16),
        shape("layer_bias", 32768, 1024, kLayer | kBias, DType::bf16),
        shape("layer_bias", 16384, 8192, kLayer | kBias, DType::f16),
        shape("layer_bias", 4096, 65536, kLayer | kBias, DType::bf16),
        shape("plain", 32768, 256, 0, DType::f16),
        shape("prenorm", 128, 4096, kPreNorm, DType::bf16),
        {"qk_3d_32768x32x128", {"", "", 32768, 32, 128, kWeightF32, q128, 128}, DType::bf16},
    };
    if (opt.full_bench) {
        shapes.push_back(shape("layer_bias_rstd", 32768, 4096, kLayer | kBias | kRstd, DType::bf16));
        shapes.push_back(shape("prenorm", 32768, 2048, kPreNorm, DType::f16));
        shapes.push_back(shape("layer_bias", 4096, 16384, kLayer | kBias, DType::bf16));
        shapes.push_back(shape("plain", 8192, 5120, kWeightF32, DType::bf16));
    }
    for (const Shape& s : shapes) {
        ProdCase c = s.c;
        // Timed out of place: repeats of an in-place call would feed each launch the previous one's output,
        // and the timed launches' outputs are checked. The in-place forms are correctness cases.
        c.opts &= ~(kYInPlace | kResInPlace);
        const DType t = s.t;
        ProdCase checked = c;  // fewer rows on the CPU emulator (opt.max_checked_bench_elements)
        checked.outer = checked_bench_rows(c.outer, (c.heads ? c.heads : 1) * c.cols, opt);
        plan.cases.push_back(make_gpu_case("bench_" + s.label + "_" + dtype_name(t), checked_bench_what(c.outer, checked.outer),
                                           [checked, t, mine](uint64_t seed) { return prod_call(checked, t, seed, mine); },
                                           1, true));
        plan.bench.push_back(make_bench_shape(s.label, t, [c, t, mine](uint64_t seed) { return prod_call(c, t, seed, mine); },
                                              [c, t, ref](uint64_t seed) { return prod_call(c, t, seed, ref); }));
    }
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(9, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::production_plan(student, *reference, opt); })
