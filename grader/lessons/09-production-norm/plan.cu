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
#include "lessons/09-production-norm/error_cases.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"

namespace workbook {
namespace {

namespace l9 = lesson9;

/// Options of a call, as bits.
enum : unsigned {
    kLayer = 1u << 0,       ///< LayerNorm (else RMSNorm)
    kBias = 1u << 1,        ///< a bias
    kRstd = 1u << 2,        ///< rstd written out
    kResidual = 1u << 3,    ///< a residual input
    kResidualOut = 1u << 4, ///< residual_out written (needs kResidual)
    kWeightF32 = 1u << 5,   ///< the weight stored in fp32
    kBiasF32 = 1u << 6,     ///< the bias stored in fp32
    kYInPlace = 1u << 7,    ///< y is exactly x
    kResInPlace = 1u << 8,  ///< residual_out is exactly residual
    kYDense = 1u << 9,      ///< y contiguous even where x is strided
    kPreNorm = kResidual | kResidualOut,
};

/// The tensors of a call, in the order prod_call creates them.
enum TensorId : int { tX, tResidual, tWeight, tBias, tY, tResidualOut, tRstd, kTensorCount };
const char* const kTensorName[kTensorCount] = {"x", "residual", "weight", "bias", "y", "residual_out", "rstd"};

/// One tensor's own layout where it differs from the case's (the layout table's cases).
struct OwnLayout {
    int64_t stride0 = 0, stride1 = 0;  ///< outer strides, 0: the case's (rstd: its batch stride, 3-D only)
    int64_t misalign = -1;             ///< elements past alignment, -1: the case's
};

/// What the caller does with its NormProblem between norm_create and the launch.
enum class AfterCreate {
    keep,    ///< keeps it alive and unchanged until the case ends
    change,  ///< reuses it for another call: the other mode, another eps, x and y exchanged, one row
    free,    ///< clears it and frees it
};

/// One GPU case. heads = 0: x is 2-D [rows = outer, cols]; otherwise 3-D [outer, heads, cols].
struct ProdCase {
    std::string name, what;
    int64_t outer, heads, cols;
    unsigned opts = 0;
    int64_t stride0 = 0, stride1 = 0;  ///< x's outer strides (0: contiguous)
    InputKind kind = InputKind::normal;
    bool large_mean = false;  ///< rows whose mean is far from zero (make_large_mean)
    float eps = 1e-5f;
    int64_t misalign = 0;         ///< every tensor this many elements off alignment
    int64_t weight_misalign = 0;  ///< the weight alone
    bool f16_only = false;
    int repeats = 2;
    std::array<OwnLayout, kTensorCount> own{};  ///< per-tensor strides and misalignment
    bool outlier_col0 = false;  ///< every row of x has one outlier of 30000; in some rows it is column 0
    float x_scale = 1.0f;       ///< x's magnitudes times this (0: every element of x is ±0 but an outlier)
    float x_outlier = 0.0f;     ///< non-zero: one element of each row of x (a column hashed from the row) this large
    AfterCreate after_create = AfterCreate::keep;
    bool relaunch = false;  ///< the descriptor launched twice, new input values at the same addresses between
};

int64_t rows_of(const ProdCase& c) { return c.heads ? c.outer * c.heads : c.outer; }

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

/// Layout cases generated for every tensor argument, 2-D and 3-D: a base aligned only to its
/// element size (every other pointer 16-byte aligned), an outer stride that no vector width
/// divides, padded rows (the padding must stay untouched), and for the weight and bias the same
/// in fp32. Every option is on, out of place, so each tensor is present; rows of 264 columns let
/// every dtype use 16-byte vectors where the layout allows them.
std::vector<ProdCase> layout_cases() {
    std::vector<ProdCase> out;
    const unsigned every = kLayer | kBias | kRstd | kPreNorm;
    const int64_t cols = 264;
    for (const bool three_d : {false, true}) {
        const std::string dims = three_d ? "3d" : "2d";
        const int64_t outer = three_d ? 6 : 40, heads = three_d ? 4 : 0;
        auto add = [&](TensorId which, const std::string& variant, const std::string& what, OwnLayout own,
                       unsigned extra = 0) {
            const std::string shape = three_d ? "3-D [6, 4, 264]" : "2-D [40, 264]";
            ProdCase c{"layout_" + dims + "_" + variant + "_" + kTensorName[which],
                       shape + ", " + kTensorName[which] + " " + what + ", every other tensor aligned and dense", outer,
                       heads, cols, every | extra};
            c.own[which] = own;
            out.push_back(c);
        };
        for (TensorId which : {tX, tResidual, tWeight, tBias, tY, tResidualOut, tRstd}) {
            add(which, "misaligned_base", "one element past a 16-byte boundary", {0, 0, 1});
            if (which == tWeight || which == tBias) {
                add(which, "misaligned_fp32", "in fp32, one element past a 16-byte boundary", {0, 0, 1},
                    which == tWeight ? kWeightF32 : kBiasF32);
                continue;
            }
            if (which == tRstd) {
                if (three_d) add(which, "padded_batch_stride", "[6, 4] with batch stride 7", {7, 0, -1});
                continue;
            }
            if (!three_d) {
                add(which, "odd_row_stride", "with row stride 265: no vector width divides it", {cols + 1, 0, -1});
                add(which, "padded_rows", "with row stride 304: 40 elements of padding a row", {cols + 40, 0, -1});
            } else {
                add(which, "odd_head_stride", "with head stride 265 (batch stride 4 x 265)", {0, cols + 1, -1});
                add(which, "odd_batch_stride", "with head stride 264 and batch stride 1057", {4 * cols + 1, cols, -1});
                add(which, "padded_heads",
                    "with head stride 288 and batch stride 1168: padding after every head and batch",
                    {4 * (cols + 24) + 16, cols + 24, -1});
            }
        }
    }
    return out;
}

/// Cases of the rules the hand-written list below leaves out: the descriptor's lifetime, repeated
/// launches, eps = 0, a padded 3-D rstd on every kernel's path, and LayerNorm rows whose first
/// element is far from their mean. The freed problem comes last (production_plan says why).
std::vector<ProdCase> rule_cases() {
    const unsigned full = kLayer | kBias | kRstd | kPreNorm;
    std::vector<ProdCase> out;
    auto add = [&](ProdCase c, auto&& set) {
        set(c);
        out.push_back(std::move(c));
    };
    // The descriptor holds what create validated: the caller's problem may change or go away.
    add({"descriptor_problem_changed_after_create",
         "the caller's NormProblem reused after create (other mode, eps 0.5, x and y exchanged, one row): the launch "
         "computes the problem create saw",
         100, 0, 1024, kBias | kRstd | kPreNorm},
        [](ProdCase& c) { c.after_create = AfterCreate::change; });
    // One descriptor, launched again on new values at the same addresses.
    add({"repeat_new_inputs_same_addresses",
         "one descriptor launched twice, every input rewritten with new values between the launches", 200, 0, 1024,
         full | kWeightF32},
        [](ProdCase& c) { c.relaunch = true; });
    add({"repeat_new_inputs_same_addresses_in_place_3d",
         "3-D [20, 8, 128] in place, launched twice, the inputs rewritten between the launches", 20, 8, 128,
         kRstd | kPreNorm | kYInPlace | kResInPlace},
        [](ProdCase& c) { c.relaunch = true; });
    add({"eps_zero", "eps = 0, the smallest valid eps, on rows of nonzero variance", 200, 0, 1024,
         kLayer | kBias | kRstd},
        [](ProdCase& c) { c.eps = 0.0f; });
    // rstd of a 3-D call in a [batch, heads] slice whose batch stride is padded, on each kernel's path.
    add({"rstd_3d_padded_batch_stride_decode", "3-D [8, 16, 1024] pre-norm, rstd [8, 16] with batch stride 19", 8, 16,
         1024, kRstd | kPreNorm},
        [](ProdCase& c) { c.own[tRstd].stride0 = 19; });
    add({"rstd_3d_padded_batch_stride_long_rows", "3-D [4, 8, 16384] RMSNorm, rstd [4, 8] with batch stride 11", 4, 8,
         16384, kRstd},
        [](ProdCase& c) { c.own[tRstd].stride0 = 11; });
    add({"rstd_3d_padded_batch_stride_cluster", "3-D [2, 3, 65536] LayerNorm + bias, rstd [2, 3] with batch stride 5",
         2, 3, 65536, kLayer | kBias | kRstd},
        [](ProdCase& c) { c.own[tRstd].stride0 = 5; });
    // LayerNorm rows whose first element is an outlier: a variance taken about that element in
    // one pass (E[(s - s0)^2] - E[s - s0]^2) cancels; the two-pass or Welford variance does not.
    // Without a residual: beside one, 16-bit rstd may come from the rounded sum, and its
    // tolerance (an ulp of T) admits what the cancellation costs.
    add({"layernorm_outlier_in_column_0",
         "LayerNorm + bias of 200 rows of 4096, rows whose column 0 is an outlier of 30000 (the mean near 7)", 200, 0,
         4096, kLayer | kBias | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_short", "the same at 512 columns, several rows per block", 300, 0, 512,
         kLayer | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_decode", "the same, 64 rows of 4096 with a bias (a decode step)", 64, 0, 4096,
         kLayer | kBias | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_long_rows", "the same, 8 rows of 32768 with a bias and an fp32 weight", 8, 0,
         32768, kLayer | kBias | kRstd | kWeightF32},
        [](ProdCase& c) { c.outlier_col0 = true; });
    // The caller's problem gone: a descriptor that reads it at launch reads freed memory.
    add({"descriptor_problem_freed_after_create",
         "the caller's NormProblem cleared and freed after create: the launch computes the problem create saw", 100, 0,
         1024, kLayer | kBias | kRstd | kPreNorm},
        [](ProdCase& c) { c.after_create = AfterCreate::free; });
    return out;
}

/// Each parameter's dtype on the plans chosen by it: 16-bit RMSNorm rows of 7168 columns, more
/// than the few-rows plans take, go to the two-pass kernel through the L2 only with both
/// parameters in T (its fp32 code is compiled out). A plan chosen on the weight's dtype alone
/// reads an fp32 bias as T there, and one chosen on the bias's alone an fp32 weight.
std::vector<ProdCase> parameter_dtype_cases() {
    std::vector<ProdCase> out = {
        {"weight_f32_rows_read_twice_shape", "257 rows of 7168, weight in fp32, no bias: the shape read twice in T",
         257, 0, 7168, kWeightF32},
        {"bias_f32_weight_t_rows_read_twice_shape",
         "257 rows of 7168, bias in fp32, weight in T: the shape read twice in T", 257, 0, 7168, kBias | kBiasF32},
    };
    for (ProdCase& c : out) c.f16_only = true;  // fp32 activations take fp32 parameters as T
    return out;
}

/// Cases that reach the rows kernel's own paths (one row per group of lanes, several rows a
/// block, the staged parameters) where the list above does not; and LayerNorm through the Welford merge
/// of the streamed rows (the device helpers above the rows kernel).
std::vector<ProdCase> rows_kernel_cases() {
    // LayerNorm rows of 17409 columns: odd, so every dtype reads them element by element, and
    // past 1024 threads of 16 elements, so they take the two-pass kernel with every option
    // compiled in (launch_stream), whose Welford merges only LayerNorm reaches. 17409 is
    // 1025 past a multiple of 2048 (1024 threads, 2 loads a step): one thread's last step
    // ends exactly at the row's end, so a load one element further runs off x.
    const int64_t cols = 16384 + 1025;
    std::vector<ProdCase> out;
    // Zeros are elements of the mean like any other: a merge that skips a part whose mean is
    // 0 leaves the one nonzero element alone as the row's mean, with no variance.
    ProdCase zeros{"layernorm_streamed_one_nonzero_per_row",
                   "LayerNorm of 2 rows of 17409 columns, every element 0 but one of magnitude 4 a row", 2, 0, cols,
                   kLayer | kRstd};
    zeros.x_scale = 0.0f;
    zeros.x_outlier = 4.0f;
    out.push_back(zeros);
    // Magnitudes below 2e-7: a mean kept about 1 instead of 0 rounds each value to a multiple
    // of 2^-24, which moves the mean by more than the fp32 tolerance of such rows.
    ProdCase tiny{"layernorm_streamed_tiny_values",
                  "LayerNorm of 2 rows of 17409 columns, magnitudes below 2e-7 (eps sets rstd)", 2, 0, cols, kLayer};
    tiny.x_scale = 1e-7f;
    out.push_back(tiny);
    return out;
}

/// Cases that reach the streamed kernels (the two-pass kernel through the L2, a row split over a
/// cluster) where the list above does not.
///
/// Rows past 16384 columns whose width allows no 16-byte vector (odd columns) are streamed by the
/// two-pass kernel, one element a vector, 1024 threads a row: 17409 columns leave the thread that
/// loads the row's end holding one vector in a step of two (17409 = 8 · 2048 + 1024 + 1), and with
/// a residual (one vector a step) the last vector opens a step of its own. A row split over a
/// cluster: 36864 columns make every slice 2304 vectors (2 blocks of 16-bit rows, 4 of fp32 ones),
/// 2 · 1024 + 256, so one thread opens a step on the slice's last vector and another loads past
/// it; 16-bit rows with an fp32 weight or bias take the slice kernel's fp32 path.
std::vector<ProdCase> streamed_kernel_cases() {
    std::vector<ProdCase> out = {
        {"streamed_layernorm_odd_cols",
         "2 rows of 17409 (odd: 1-element vectors, streamed twice), LayerNorm + bias + rstd of rows with a large mean",
         2, 0, 17409, kLayer | kBias | kRstd, 0, 0, InputKind::normal, true},
        {"streamed_prenorm_3d_padded_rstd",
         "3-D [2, 2, 16391] streamed, RMSNorm + residual in/out, rstd [2, 2] with batch stride 3", 2, 2, 16391,
         kRstd | kPreNorm},
        {"cluster_rows_weight_f32", "3 rows of 36864 over a cluster, LayerNorm + bias + rstd, weight f32 beside T",
         3, 0, 36864, kLayer | kBias | kRstd | kWeightF32},
        {"cluster_rows_residual_in_bias_f32",
         "3 rows of 36864 over a cluster, RMSNorm + residual in (no residual_out), bias f32 beside a weight in T", 3,
         0, 36864, kResidual | kBias | kBiasF32},
    };
    out[1].own[tRstd].stride0 = 3;  // rstd [2, 2] in rows of 3: its index is not the row's number
    return out;
}

/// Cases at the launch plan's boundaries: a row length or a row count exactly at a threshold
/// where the plan moves to another kernel, so that each kernel is graded on the longest and
/// shortest rows it is chosen for. The kernels that leave something out (the PLAIN rows kernel
/// holds 2 vectors a thread and no bias; the two-pass kernel through the L2 beside a residual
/// has no bias) are each met one step past the last shape they may take, where a plan that
/// hands them that shape computes a wrong row. (An fp32 parameter on the shapes read twice in
/// T is parameter_dtype_cases'.)
std::vector<ProdCase> plan_boundary_cases() {
    std::vector<ProdCase> out;
    auto add = [&](ProdCase c, auto&& set) {
        set(c);
        out.push_back(std::move(c));
    };
    // 16392 16-bit columns are 2049 16-byte vectors, one past the 2048 that 1024 threads of
    // 2 vectors hold: rows without a bias stay in registers at 8 vectors a thread.
    out.push_back({"rms_rows_one_vector_past_two_per_thread",
                   "2 rows of 16392, RMSNorm + rstd: 2049 16-byte vectors (16-bit), one more than 1024 threads of "
                   "2 vectors hold",
                   2, 0, 16392, kRstd});
    // Exactly 128 MiB of input beside a residual, where rows without a bias are read twice
    // through the L2 (that kernel compiled without the bias).
    add({"residual_in_bias_128mib",
         "4096 x 8192 RMSNorm + bias + residual in: exactly 128 MiB of input, where rows without a bias beside "
         "a residual are read twice through the L2",
         4096, 0, 8192, kBias | kResidual},
        [](ProdCase& c) {
            c.f16_only = true;
            c.repeats = 1;
        });
    return out;
}

std::vector<ProdCase> prod_cases() {
    const int64_t q128 = (32 + 2 * 8) * 128;  // token stride of q in a qkv tensor: 32 heads, 8 kv heads, dim 128
    const InputKind normal = InputKind::normal;
    const unsigned full = kLayer | kBias | kRstd | kPreNorm;
    return {
        // Every option alone.
        {"plain_rms", "RMSNorm, nothing else", 500, 0, 4096},
        {"layernorm", "LayerNorm without bias", 500, 0, 4096, kLayer},
        {"bias", "RMSNorm with a bias: y = x^ * w + b", 500, 0, 4096, kBias},
        {"rstd", "rstd written out per row", 500, 0, 4096, kRstd},
        {"residual_in_only", "a residual added, the sum not written back", 300, 0, 2048, kResidual},
        {"weight_f32", "the weight stored in fp32 while x is T", 500, 0, 4096, kWeightF32},
        {"bias_f32_weight_t", "bias in fp32, weight in T: each parameter's type is its own", 300, 0, 2048,
         kBias | kBiasF32},
        // The combinations models use.
        {"prenorm_residual", "pre-norm block: residual in and out, separate tensors", 500, 0, 4096, kPreNorm},
        {"prenorm_in_place", "pre-norm in place: y == x, residual_out == residual", 500, 0, 4096,
         kPreNorm | kYInPlace | kResInPlace},
        {"y_aliases_x_only", "y == x, residual_out separate", 300, 0, 2048, kPreNorm | kYInPlace},
        {"residual_aliases_only", "residual_out == residual, y separate", 300, 0, 2048, kPreNorm | kResInPlace},
        {"layernorm_bias_rstd", "LayerNorm with bias and rstd, as GPT-2 and BERT train it", 500, 0, 4096,
         kLayer | kBias | kRstd},
        {"layernorm_mixed_precision", "LayerNorm, weight and bias in fp32, rstd", 300, 0, 4096,
         kLayer | kBias | kRstd | kWeightF32 | kBiasF32},
        {"everything_in_place", "LayerNorm + bias + rstd + residual in/out, in place, fp32 parameters", 300, 0, 4096,
         full | kWeightF32 | kBiasF32 | kYInPlace | kResInPlace},
        {"qk_norm_3d_strided", "3-D q slice of a qkv tensor [300, 32, 128], in place, weight f32", 300, 32, 128,
         kYInPlace | kWeightF32, q128, 128},
        {"qk_norm_3d_dense_out", "3-D q slice in, contiguous y out, rstd [300, 32]", 300, 32, 128,
         kYDense | kRstd, q128, 128},
        {"layernorm_3d_residual", "3-D [64, 12, 768] LayerNorm with residual in/out and bias", 64, 12, 768,
         kLayer | kBias | kPreNorm},
        {"head_stride_padded_3d", "3-D, head stride 144 for 128 columns: padding stays untouched", 200, 8, 128,
         kRstd | kYInPlace, 8 * 144 + 64, 144},
        // Rows of many sizes.
        {"rows_zero", "rows = 0: create succeeds, the launch launches nothing", 0, 0, 1024, full},
        {"rows_zero_3d", "a 3-D tensor of batch 0: nothing to do", 0, 8, 128, kRstd},
        {"one_row", "a single row", 1, 0, 8192, kLayer | kBias | kRstd},
        // Decode batches (128 rows or fewer): the reference loads the parameters with the row.
        {"decode_everything_in_place", "64 rows, LayerNorm + bias + rstd + residual in/out, in place, fp32 parameters",
         64, 0, 4096, full | kWeightF32 | kBiasF32 | kYInPlace | kResInPlace},
        {"decode_bias_f32_weight_t", "128 rows, bias in fp32 and weight in T", 128, 0, 2048, kBias | kBiasF32},
        {"decode_3d_prenorm", "3-D [8, 16, 1024], 128 rows, pre-norm with rstd", 8, 16, 1024, kRstd | kPreNorm},
        {"many_rows_gt_65535", "70001 rows", 70001, 0, 136, kRstd | kPreNorm},
        {"rstd_short_rows", "1001 rows of 256 with rstd: several rows per block", 1001, 0, 256, kRstd},
        {"short_rows_layernorm", "1003 rows of 512, LayerNorm + bias + rstd, in place", 1003, 0, 512,
         kLayer | kBias | kRstd | kYInPlace},
        {"cols_1", "rows of one element (LayerNorm: y is the bias)", 257, 0, 1, kLayer | kBias | kRstd},
        {"cols_lt_warp", "19 columns", 1000, 0, 19, kLayer | kRstd | kPreNorm},
        {"prime_cols", "4099 columns, in place", 513, 0, 4099, kLayer | kBias | kPreNorm | kYInPlace | kResInPlace},
        {"odd_cols", "1001 columns", 300, 0, 1001, kBias | kRstd},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops to 4", 400, 0, 4100, kLayer | kPreNorm},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 0, 4095, full},
        {"padded_stride_partial_vector", "4095 columns in rows of 4160: strides allow 16 bytes, cols does not", 64, 0,
         4095, kLayer | kBias, 4160},
        {"misaligned_stride", "row stride 4097: every other row is misaligned", 200, 0, 4096, kRstd | kPreNorm, 4097},
        {"row_stride_gt_cols", "rows of 1000 in a stride of 1536, padding untouched", 300, 0, 1000,
         kLayer | kRstd | kPreNorm, 1536},
        {"cols_gt_1024xwidth", "9000 columns, in place", 200, 0, 9000, full | kYInPlace | kResInPlace},
        {"rows_read_twice_in_place", "300 rows of 8192, RMSNorm + rstd, in place: the row read twice through the L2",
         300, 0, 8192, kRstd | kYInPlace},
        {"bias_rows_read_twice_in_place", "300 rows of 16384, RMSNorm + bias + rstd, in place: read twice through the L2",
         300, 0, 16384, kBias | kRstd | kYInPlace},
        {"rows_read_twice_3d", "3-D [40, 8, 16384], heads 16448 apart, rstd: read twice through the L2", 40, 8, 16384,
         kRstd, 8 * 16448 + 128, 16448},
        {"long_rows_32768", "32768 columns, LayerNorm + residual: beyond one block's registers in fp32", 64, 0,
         32768, full | kWeightF32},
        {"cols_max_65536", "65536 columns, the longest row, every option", 64, 0, 65536, full},
        {"cols_max_65536_in_place", "65536 columns in place, RMSNorm + residual", 48, 0, 65536,
         kPreNorm | kYInPlace | kResInPlace | kRstd},
        {"misaligned_base", "every pointer one element past an aligned address, in place", 300, 0, 4096,
         full | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 1},
        {"misaligned_weight_only", "the weight alone one element off; everything else aligned", 300, 0, 4096,
         kBias | kWeightF32, 0, 0, normal, false, 1e-5f, 0, 1},
        // Values that break kernels.
        {"all_zero_rows", "every other row is zero: RMSNorm gives 0, LayerNorm gives the bias", 1000, 0, 1024,
         kLayer | kBias | kRstd, 0, 0, InputKind::zero_rows},
        {"all_zero_rows_rms", "every other row of x and residual is zero", 1000, 0, 1024, kRstd | kPreNorm, 0, 0,
         InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in row 37 stays in row 37 (y, rstd, residual_out)", 100, 0, 2048,
         kLayer | kRstd | kPreNorm, 0, 0, InputKind::nan_row},
        {"eps_inside_sqrt", "values below 0.01 with eps = 1e-2: eps goes inside the square root", 200, 0, 2048,
         kLayer | kRstd, 0, 0, InputKind::small, false, 1e-2f},
        {"layernorm_large_mean", "LayerNorm of rows with mean 1000 (bf16: 256): E[x^2] - E[x]^2 and a rounded mean fail",
         300, 0, 4096, kLayer | kBias | kRstd, 0, 0, normal, true},
        {"layernorm_large_mean_short", "the same at 512 columns, several rows per block", 600, 0, 512,
         kLayer | kRstd, 0, 0, normal, true},
        {"fp16_huge_values", "x near 65504: squares overflow an fp16 accumulator", 256, 0, 4096, kLayer | kRstd, 0,
         0, InputKind::huge, false, 1e-5f, 0, 0, true},
        {"prenorm_in_place_256mib", "pre-norm in place on 16385 x 8192 (256 MiB of input): read twice through the L2",
         16385, 0, 8192, kPreNorm | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 0, 0, true, 1},
        {"past_2pow31_elements", "rows x cols past 2^31 elements, pre-norm in place", 32769, 0, 65536,
         kPreNorm | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 0, 0, true, 1},
    };
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
