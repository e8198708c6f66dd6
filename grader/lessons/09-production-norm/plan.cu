/// @file lesson_production.cu
/// @brief Cases and benchmark shapes of lesson 9, the production norm behind a descriptor.
///
/// A call has up to seven tensors: x, residual, weight, bias (inputs) and y, residual_out, rstd
/// (outputs); which ones are present, the mode, the parameters' dtypes and the layout are the
/// case's options. Each GPU case creates a descriptor on the case's real tensors (before the
/// launch, outside the graph capture), launches it, and checks every output against the fp64
/// oracle. The error-code cases only call norm_create, on problems with exactly one fault.
#include <memory>
#include <string>
#include <vector>

#include "engine/gpu_case.h"
#include "lessons/09-production-norm/error_cases.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/09-production-norm/api.h"

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

/// A descriptor that is destroyed with the call that created it.
struct BoundDescriptor {
    const api::Lesson9* table = nullptr;
    l9::NormDescriptor* desc = nullptr;
    ~BoundDescriptor() {
        if (desc) table->destroy(desc);
    }
};

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
    const Layout act = three_d ? Layout::heads_of(c.outer, heads, c.cols, s0, s1) : Layout::rows_of(rows, c.cols, s0);
    const Layout dense = three_d ? Layout::heads_of(c.outer, heads, c.cols, heads * c.cols, c.cols)
                                 : Layout::rows_of(rows, c.cols, c.cols);
    const Layout vec = Layout::rows_of(1, c.cols, c.cols);
    const Layout per_row = three_d ? Layout::heads_of(c.outer, heads, 1, heads, 1) : Layout::rows_of(rows, 1, 1);

    OracleProblem& p = call.problem;
    p.rows = rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.layer_norm = (c.opts & kLayer) != 0;
    p.x = input_spec(c.kind, seed, 0, rows);
    if (c.large_mean) make_large_mean(p.x, dtype);
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
    const int64_t mis = c.misalign;
    std::vector<TensorRole>& t = call.tensors;
    t.push_back(TensorRole{"x", act, mis, true, p.x});
    const int ix = 0;
    int ir = -1, ib = -1, iro = -1, irs = -1;
    if (p.has_residual) {
        ir = static_cast<int>(t.size());
        t.push_back(TensorRole{"residual", act, mis, true, p.residual});
    }
    const int iw = static_cast<int>(t.size());
    t.push_back(TensorRole{"weight", vec, c.weight_misalign ? c.weight_misalign : mis, true, p.weight});
    if (p.weight_f32) t.back().dtype = DType::f32;
    if (p.has_bias) {
        ib = static_cast<int>(t.size());
        t.push_back(TensorRole{"bias", vec, mis, true, p.bias});
        if (p.bias_f32) t.back().dtype = DType::f32;
    }
    const int iy = static_cast<int>(t.size());
    TensorRole y{"y", (c.opts & kYDense) && !(c.opts & kYInPlace) ? dense : act, mis, false};
    y.kind = OutputKind::normalised_scaled;
    y.extra_ulps = p.has_residual ? 1 : 0;  // the contract allows normalising the rounded residual_out
    y.alias_of = (c.opts & kYInPlace) ? ix : -1;
    t.push_back(y);
    if (c.opts & kResidualOut) {
        iro = static_cast<int>(t.size());
        TensorRole ro{"residual_out", act, mis, false};
        ro.kind = OutputKind::rounded_sum;
        ro.alias_of = (c.opts & kResInPlace) ? ir : -1;
        t.push_back(ro);
    }
    if (c.opts & kRstd) {
        irs = static_cast<int>(t.size());
        TensorRole rs{"rstd", per_row, 0, false};
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
            d.stride[0] = three_d ? heads : 1;
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
    call.bind = [np, bound, ix, ir, iw, ib, iy, iro, irs, label](const std::vector<void*>& d) mutable -> std::string {
        np.x.data = d[ix];
        np.weight.data = d[iw];
        np.y.data = d[iy];
        if (ir >= 0) np.residual.data = d[ir];
        if (ib >= 0) np.bias.data = d[ib];
        if (iro >= 0) np.residual_out.data = d[iro];
        if (irs >= 0) np.rstd.data = d[irs];
        l9::NormDescriptor* desc = nullptr;
        const l9::Status st = bound->table->create(np, &desc);
        if (st != l9::Status::success)
            return std::string("norm_create refused a valid problem (") + label + ") with Status::" +
                   l9::status_name(st) + "; nothing was launched";
        if (!desc) return "norm_create returned success but no descriptor (*out is null); nothing was launched";
        bound->desc = desc;
        return "";
    };
    call.launch = [bound](const std::vector<void*>&, cudaStream_t s) {
        return bound->table->launch(bound->desc, s);
    };
    return call;
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
    for (const ProdCase& c : prod_cases()) {
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
