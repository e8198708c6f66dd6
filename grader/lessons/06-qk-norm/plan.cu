/// @file lesson_qk_norm.cu
/// @brief Cases and benchmark shapes of lesson 6, the per-head norm of q and k.
///
/// x is [tokens, heads, head_dim] with a token and a head stride: usually the q (or k) slice of a
/// fused qkv tensor, whose token stride (heads + 2 kv_heads) * head_dim leaves the other parts in
/// between. y is either x itself (same pointer and strides) or a separate tensor.
#include "engine/gpu_case.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"
#include "lessons/06-qk-norm/api.h"

namespace workbook {
namespace {

using QkFn = std::function<cudaError_t(const void* x, int64_t xts, int64_t xhs, const void* w, void* y, int64_t yts,
                                       int64_t yhs, int64_t tokens, int64_t heads, int64_t head_dim, float eps,
                                       cudaStream_t)>;

template <typename T>
QkFn typed(api::QkNormFn<T> fn) {
    return [fn](const void* x, int64_t xts, int64_t xhs, const void* w, void* y, int64_t yts, int64_t yhs,
                int64_t tokens, int64_t heads, int64_t d, float eps, cudaStream_t s) {
        return fn(static_cast<const T*>(x), xts, xhs, static_cast<const T*>(w), static_cast<T*>(y), yts, yhs, tokens,
                  heads, d, eps, s);
    };
}

QkFn qk_fn(const Submission& s, DType t) {
    return typed_entry(s.table<api::Lesson6>(), t, [](auto fn) { return typed(fn); });
}

/// A case: x's strides (0 = contiguous), y's (0 = contiguous), or y in place.
struct QkCase {
    std::string name, what;
    int64_t tokens, heads, head_dim;
    int64_t x_token_stride = 0, x_head_stride = 0;
    bool in_place = false;
    InputKind kind = InputKind::normal;
    int64_t misalign = 0;
    bool f16_only = false;
    int repeats = 2;
    int64_t y_token_stride = 0, y_head_stride = 0;  ///< out of place only (0 = contiguous)
    int64_t x_mis = 0, w_mis = 0, y_mis = 0;        ///< one tensor's own misalignment, on top of `misalign`
    float eps = 1e-6f;
    bool repeat_call = false;  ///< called twice at the same addresses, new inputs in between
};

/// Token stride of q inside a qkv tensor with `kv` key/value heads per q head group.
int64_t qkv_stride(int64_t heads, int64_t kv_heads, int64_t d) { return (heads + 2 * kv_heads) * d; }

GpuCall qk_call(const QkCase& c, DType dtype, uint64_t seed, const QkFn& fn) {
    GpuCall call;
    call.dtype = dtype;
    const int64_t xhs = c.x_head_stride ? c.x_head_stride : c.head_dim;
    const int64_t xts = c.x_token_stride ? c.x_token_stride : c.heads * xhs;
    const int64_t yhs = c.in_place ? xhs : c.y_head_stride ? c.y_head_stride : c.head_dim;
    const int64_t yts = c.in_place ? xts : c.y_token_stride ? c.y_token_stride : c.heads * yhs;
    OracleProblem& p = call.problem;
    p.rows = c.tokens * c.heads;
    p.cols = c.head_dim;
    p.eps = c.eps;
    p.x = input_spec(c.kind, seed, 0, p.rows);
    p.weight = weight_spec(seed);
    // heads = 0 holds no head at all: laid out as no tokens of one head, so no layout divides by zero.
    const int64_t layout_tokens = c.heads == 0 ? 0 : c.tokens, layout_heads = c.heads == 0 ? 1 : c.heads;
    TensorRole y{"y", Layout::heads_of(layout_tokens, layout_heads, c.head_dim, yts, yhs), c.misalign + c.y_mis, false};
    y.alias_of = c.in_place ? 0 : -1;
    call.tensors = {TensorRole{"x", Layout::heads_of(layout_tokens, layout_heads, c.head_dim, xts, xhs),
                               c.misalign + c.x_mis, true, p.x},
                    TensorRole{"weight", Layout::rows_of(1, c.head_dim, c.head_dim), c.misalign + c.w_mis, true,
                               p.weight},
                    y};
    const int64_t tokens = c.tokens, heads = c.heads, d = c.head_dim;
    const float eps = c.eps;
    call.launch = [=](const std::vector<void*>& data, cudaStream_t s) {
        return fn(data[0], xts, xhs, data[1], data[2], yts, yhs, tokens, heads, d, eps, s);
    };
    return c.repeat_call ? repeated_at_same_addresses(std::move(call)) : call;
}

/// The layout rules as cases, one property of one tensor argument at a time (64 tokens of 8
/// heads of 128, out of place, everything else aligned and contiguous): each pointer (weight
/// included) one element past an aligned address; each of the four strides a multiple of 2 but
/// not of the vector width; each stride padded by a multiple of the vector width, the padding
/// left untouched. A width or an offset that forgets one argument fails by that argument's name.
std::vector<QkCase> layout_cases() {
    const int64_t tokens = 64, heads = 8, d = 128;
    std::vector<QkCase> v;
    auto add = [&](const std::string& name, const std::string& what, auto&& set) {
        QkCase c{"layout_" + name, what, tokens, heads, d};
        set(c);
        v.push_back(c);
    };
    add("x_base_misaligned", "x one element past an aligned address", [](QkCase& c) { c.x_mis = 1; });
    add("weight_base_misaligned", "weight one element past an aligned address", [](QkCase& c) { c.w_mis = 1; });
    add("y_base_misaligned", "y one element past an aligned address", [](QkCase& c) { c.y_mis = 1; });
    struct Stride {
        const char* name;
        int64_t QkCase::*token;  ///< the tensor's token stride
        int64_t QkCase::*head;   ///< its head stride
    };
    for (const Stride& s : {Stride{"x", &QkCase::x_token_stride, &QkCase::x_head_stride},
                            Stride{"y", &QkCase::y_token_stride, &QkCase::y_head_stride}}) {
        const std::string t = s.name;
        for (const int64_t pad : {int64_t(2), int64_t(16)}) {
            const bool odd = pad == 2;
            const std::string how = odd ? "_stride_not_multiple_of_width" : "_stride_padded";
            const std::string said = odd ? " + 2, not a multiple of the vector width"
                                         : " + 16, a multiple of the vector width; the padding stays untouched";
            add(t + "_token" + how, t + "'s token stride heads x head_dim" + said, [&](QkCase& c) {
                c.*s.token = heads * d + pad;
                c.*s.head = d;
            });
            add(t + "_head" + how, t + "'s head stride head_dim" + said + " (token stride heads x head stride)",
                [&](QkCase& c) {
                    c.*s.head = d + pad;
                    c.*s.token = heads * (d + pad);
                });
        }
    }
    return v;
}

/// Heads longer than the usual 64 to 256 and shorter than the longest (the contract allows any
/// head_dim up to 65536): every power of two from 1024 to 32768, 5 tokens of 3 heads (the last block
/// of a many-heads-a-block shape holds spare lanes), and two long odd heads, where no vector width
/// divides head_dim: the longest (65535), and 2^14 + 1 with each head's last element 256 (the rest
/// below 2), so a sum of squares that stops one element short of a long head is far off.
std::vector<QkCase> long_head_cases() {
    std::vector<QkCase> v;
    for (int64_t d = 1024; d <= 32768; d *= 2)
        v.push_back({"head_dim_" + std::to_string(d), "head_dim " + std::to_string(d) + ", contiguous", 5, 3, d});
    v.push_back({"odd_head_dim_max", "head_dim 65535, the longest odd head: no vector width divides it", 3, 2, 65535});
    QkCase last{"odd_long_head_outlier_last",
                "head_dim 16385 (2^14 + 1) whose last element is 256: the sum of squares must reach the head's end",
                3, 2, 16385};
    last.kind = InputKind::outlier_last;
    v.push_back(last);
    QkCase comb{"long_heads_every_element_dominant",
                "64 heads of 32767 (2^15 - 1): in head h every element at a position p with p % 64 = h % 64 is 256 "
                "(the rest below 2), so each position dominates one head: an element counted twice or skipped "
                "anywhere leaves that head far off",
                8, 8, 32767};
    comb.kind = InputKind::comb;
    v.push_back(comb);
    return v;
}

/// The 32-bit head index at its limits, with heads of one element (the smallest tensor that
/// reaches them), in place and in fp16 only: 2^32 - 1 heads, the most whose every index and count
/// fit 32 bits, and 2^32 + 1, the fewest with a head index (2^32) past 32 bits. 8 GiB each, one
/// repetition. On the CPU emulator both run on a sample of blocks (docs/emulator.md).
std::vector<QkCase> head_index_limit_cases() {
    QkCase below{"heads_2pow32_minus_1",
                 "2^32 - 1 heads of one element (65537 tokens of 65535 heads), in place: the most a 32-bit head "
                 "index and count hold",
                 65537, 65535, 1};
    QkCase past{"heads_2pow32_plus_1",
                "2^32 + 1 heads of one element (641 tokens of 6700417 heads), in place: the last head's index, "
                "2^32, needs 33 bits",
                641, 6700417, 1};
    std::vector<QkCase> v;
    for (QkCase c : {below, past}) {
        c.in_place = true;
        c.f16_only = true;
        c.repeats = 1;
        v.push_back(c);
    }
    return v;
}

std::vector<QkCase> qk_cases() {
    const int64_t q128 = qkv_stride(32, 8, 128);
    const InputKind normal = InputKind::normal;
    std::vector<QkCase> v = {
        {"qkv_slice_q", "q of a qkv tensor (32 heads, 8 kv heads, dim 128), out of place", 300, 32, 128, q128, 128},
        {"qkv_slice_k", "k of a qkv tensor (8 kv heads), out of place", 300, 8, 128, q128, 128},
        {"in_place", "q of a qkv tensor normalised in place; k and v must stay untouched", 300, 32, 128, q128, 128,
         true},
        {"head_dim_64", "head_dim 64, contiguous", 500, 16, 64},
        {"head_dim_128", "head_dim 128, contiguous, in place", 500, 16, 128, 0, 0, true},
        {"head_dim_256", "head_dim 256 in a qkv tensor", 300, 8, 256, qkv_stride(8, 2, 256), 256},
        {"odd_head_dim", "head_dim 97: no vector width divides it", 300, 12, 97, qkv_stride(12, 4, 97), 97},
        {"padded_heads_partial_vector",
         "head_dim 97 in heads padded to 104 (token stride 832), in place: the strides allow full vectors, head_dim "
         "does not",
         300, 8, 97, 8 * 104, 104, true},
        {"head_stride_padded", "head stride 144 for head_dim 128: padding between heads stays untouched", 300, 8, 128,
         8 * 144 + 64, 144, true},
        {"rows_zero", "tokens = 0 returns success and launches nothing", 0, 32, 128},
        {"cols_1", "head_dim 1", 100, 4, 1},
        {"cols_lt_warp", "head_dim 19", 200, 6, 19, qkv_stride(6, 2, 19), 19},
        {"many_rows_gt_65535", "70001 tokens", 70001, 2, 64},
        {"misaligned_base", "x, weight and y one element past an aligned address", 300, 8, 128, q128, 128, false,
         normal, 1},
        {"all_zero_rows", "every other head is all zeros", 200, 16, 128, 0, 0, false, InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in one head must not leak into other heads", 100, 8, 128, 0, 0, false,
         InputKind::nan_row},
        {"fp16_huge_values", "fp16 values near 65504", 100, 8, 128, 0, 0, false, InputKind::huge, 0, true},
        {"cols_max_65536", "head_dim 65536, the contract's longest row", 8, 2, 65536},
        {"past_2pow31_elements", "a qkv tensor past 2^31 elements, in place", 349600, 32, 128, q128, 128, true,
         normal, 0, true, 1},
        {"heads_zero", "heads = 0 (with 100 tokens) returns success and launches nothing", 100, 0, 128},
    };
    QkCase eps{"eps_inside_sqrt", "small values with eps = 1e-2: the eps argument, inside the square root", 200, 8,
               128, qkv_stride(8, 2, 128), 128};
    eps.kind = InputKind::small;
    eps.eps = 1e-2f;
    v.push_back(eps);
    QkCase repeat{"repeat_new_inputs_same_addresses",
                  "q of a qkv tensor called twice in place, new values written between the calls: the second call's "
                  "outputs must be those of the new inputs",
                  200, 8, 128, qkv_stride(8, 2, 128), 128, true};
    repeat.repeat_call = true;
    v.push_back(repeat);
    for (const QkCase& c : layout_cases()) v.push_back(c);
    for (const QkCase& c : long_head_cases()) v.push_back(c);
    for (const QkCase& c : head_index_limit_cases()) v.push_back(c);
    return v;
}

}  // namespace

static LessonPlan qk_norm_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    for (const QkCase& c : qk_cases()) {
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const QkFn fn = qk_fn(student, t);
            const bool large = c.tokens * c.heads * c.head_dim > (int64_t(1) << 22);
            plan.cases.push_back(make_gpu_case(c.name + "_" + dtype_name(t), c.what,
                                               [c, t, fn](uint64_t seed) { return qk_call(c, t, seed, fn); },
                                               c.repeats, large));
        }
    }
    // The layout attention uses (q of qkv, 32 heads, 8 kv heads, dim 128) and a contiguous one.
    struct Shape {
        std::string label;
        QkCase c;
        DType t;
    };
    const int64_t q128 = qkv_stride(32, 8, 128);
    std::vector<Shape> shapes = {
        {"qkv_q_32768x32x128", {"", "", 32768, 32, 128, q128, 128}, DType::bf16},
        {"qkv_q_32768x32x128", {"", "", 32768, 32, 128, q128, 128}, DType::f16},
        {"32768x32x128", {"", "", 32768, 32, 128}, DType::bf16},
        {"qkv_q_128x32x128", {"", "", 128, 32, 128, q128, 128}, DType::bf16},
    };
    if (opt.full_bench) {
        shapes.push_back({"32768x32x128", {"", "", 32768, 32, 128}, DType::f16});
        shapes.push_back({"qkv_q_16384x64x64", {"", "", 16384, 64, 64, qkv_stride(64, 8, 64), 64}, DType::bf16});
    }
    for (const Shape& s : shapes) {
        const QkFn fs = qk_fn(student, s.t), fr = qk_fn(reference, s.t);
        const QkCase c = s.c;
        const DType t = s.t;
        QkCase checked = c;  // tokens cut on the CPU emulator; heads and layout stay
        checked.tokens = checked_bench_rows(c.tokens, c.heads * c.head_dim, opt);
        plan.cases.push_back(make_gpu_case("bench_" + s.label + "_" + dtype_name(t), checked_bench_what(c.tokens, checked.tokens),
                                           [checked, t, fs](uint64_t seed) { return qk_call(checked, t, seed, fs); }, 1,
                                           true));
        plan.bench.push_back(make_bench_shape(s.label, t, [c, t, fs](uint64_t seed) { return qk_call(c, t, seed, fs); },
                                              [c, t, fr](uint64_t seed) { return qk_call(c, t, seed, fr); }));
    }
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(6, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::qk_norm_plan(student, *reference, opt); })
