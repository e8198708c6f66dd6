/// @file production_error_cases.h
/// @brief Lesson 9's descriptor cases: problems with exactly one fault, each with the Status
///        norm_create must return, and valid problems at the edges of the rules; the layout and
///        overlap faults generated for every tensor, and pairs of faults for the order of checks.
///
/// Host code only, on fake addresses (norm_create must not touch memory), so the same table
/// serves the grader's cases and the CPU test of the reference's validation.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "workbook/production_norm.h"

namespace workbook::production {

namespace l9 = lesson9;


/// A valid problem on fake addresses (norm_create must not touch memory): 2-D 64 x 1024 bf16,
/// LayerNorm with every tensor, each in its own 16 MiB window.
inline l9::NormProblem valid_problem() {
    auto at = [](int slot) { return reinterpret_cast<void*>(uintptr_t(0x7f0000000000ull) + uintptr_t(slot) * (16u << 20)); };
    auto mat = [&](int slot) {
        l9::TensorDesc d;
        d.data = at(slot);
        d.dtype = l9::DataType::bf16;
        d.rank = 2;
        d.shape[0] = 64;
        d.shape[1] = 1024;
        d.stride[0] = 1024;
        d.stride[1] = 1;
        return d;
    };
    auto vec = [&](int slot, l9::DataType t) {
        l9::TensorDesc d;
        d.data = at(slot);
        d.dtype = t;
        d.rank = 1;
        d.shape[0] = 1024;
        d.stride[0] = 1;
        return d;
    };
    l9::NormProblem p;
    p.mode = l9::NormMode::layer;
    p.eps = 1e-5f;
    p.x = mat(0);
    p.residual = mat(1);
    p.weight = vec(2, l9::DataType::f32);
    p.bias = vec(3, l9::DataType::bf16);
    p.y = mat(4);
    p.residual_out = mat(5);
    p.rstd = vec(6, l9::DataType::f32);
    p.rstd.shape[0] = 64;
    return p;
}

/// A 3-D valid problem: the q slice of a qkv tensor [16, 32, 128] and a dense y.
inline l9::NormProblem valid_problem_3d() {
    l9::NormProblem p = valid_problem();
    p.mode = l9::NormMode::rms;
    p.residual = {};
    p.residual_out = {};
    p.bias = {};
    for (l9::TensorDesc* d : {&p.x, &p.y}) {
        d->rank = 3;
        d->shape[0] = 16;
        d->shape[1] = 32;
        d->shape[2] = 128;
        d->stride[0] = 32 * 128;
        d->stride[1] = 128;
        d->stride[2] = 1;
    }
    p.x.stride[0] = (32 + 16) * 128;
    p.weight.shape[0] = 128;
    p.rstd.rank = 2;
    p.rstd.shape[0] = 16;
    p.rstd.shape[1] = 32;
    p.rstd.stride[0] = 32;
    p.rstd.stride[1] = 1;
    return p;
}

inline char* byte_ptr(void* p) { return static_cast<char*>(p); }

/// Bytes of one element of `t`.
inline int64_t element_bytes(l9::DataType t) { return t == l9::DataType::f32 ? 4 : 2; }

/// Bytes from a tensor's first element to one past its last, as the contract measures an
/// output's span (first to one past the last byte it may touch).
inline int64_t span_bytes(const l9::TensorDesc& t) {
    int64_t last = 0;
    for (int d = 0; d < t.rank; ++d) {
        if (t.shape[d] == 0) return 0;
        last += (t.shape[d] - 1) * t.stride[d];
    }
    return (last + 1) * element_bytes(t.dtype);
}

/// The problem's seven tensors by name, inputs first; `output` marks the three a call writes.
struct NamedTensor {
    const char* name;
    l9::TensorDesc l9::NormProblem::*field;
    bool output;
};
inline const std::vector<NamedTensor>& named_tensors() {
    static const std::vector<NamedTensor> all = {
        {"x", &l9::NormProblem::x, false},           {"residual", &l9::NormProblem::residual, false},
        {"weight", &l9::NormProblem::weight, false}, {"bias", &l9::NormProblem::bias, false},
        {"y", &l9::NormProblem::y, true},            {"residual_out", &l9::NormProblem::residual_out, true},
        {"rstd", &l9::NormProblem::rstd, true},
    };
    return all;
}

struct ErrorCase {
    std::string name, what;
    l9::Status expected;
    std::function<void(l9::NormProblem&)> mutate;
    bool three_d = false;
    bool null_out = false;
};

/// Problems whose one fault is an output meeting another tensor by exactly one element (at the
/// other's end and at its start), and the valid neighbours that touch without meeting: an overlap
/// check whose span ends one element (or one byte) short or long is caught either way. Every pair
/// of an output and another tensor of valid_problem().
inline void add_one_element_overlaps(std::vector<ErrorCase>& cases) {
    using S = l9::Status;
    const std::vector<NamedTensor>& all = named_tensors();
    for (size_t o = 0; o < all.size(); ++o) {
        if (!all[o].output) continue;
        for (size_t i = 0; i < all.size(); ++i) {
            if (i == o || (all[i].output && i < o)) continue;  // each pair of outputs once
            const auto out = all[o].field;
            const auto other = all[i].field;
            const std::string a = all[o].name, b = all[i].name;
            cases.push_back({"error_partial_overlap_" + a + "_starts_at_" + b + "_last_element",
                             a + "'s first element is " + b + "'s last (one element shared)", S::partial_overlap,
                             [out, other](l9::NormProblem& p) {
                                 const l9::TensorDesc& t = p.*other;
                                 (p.*out).data = byte_ptr(t.data) + span_bytes(t) - element_bytes(t.dtype);
                             }});
            cases.push_back({"error_partial_overlap_" + a + "_ends_at_" + b + "_first_element",
                             a + "'s last element is " + b + "'s first (one element shared)", S::partial_overlap,
                             [out, other](l9::NormProblem& p) {
                                 l9::TensorDesc& t = p.*out;
                                 t.data = byte_ptr((p.*other).data) - span_bytes(t) + element_bytes(t.dtype);
                             }});
            cases.push_back({"accepts_" + a + "_right_after_" + b, a + " starting at the byte after " + b + "'s last",
                             S::success, [out, other](l9::NormProblem& p) {
                                 const l9::TensorDesc& t = p.*other;
                                 (p.*out).data = byte_ptr(t.data) + span_bytes(t);
                             }});
            cases.push_back({"accepts_" + a + "_right_before_" + b, a + " ending at the byte before " + b + "'s first",
                             S::success, [out, other](l9::NormProblem& p) {
                                 l9::TensorDesc& t = p.*out;
                                 t.data = byte_ptr((p.*other).data) - span_bytes(t);
                             }});
        }
    }
}

/// Layout faults generated for every tensor: a last stride other than 1, and for every tensor
/// with rows an outer stride one element too small (2-D, and 3-D for both outer dimensions).
inline void add_stride_faults(std::vector<ErrorCase>& cases) {
    using S = l9::Status;
    for (const NamedTensor& t : named_tensors()) {
        const auto f = t.field;
        const std::string n = t.name;
        if (n != "x" && n != "weight")  // those two are hand-written above
            cases.push_back({"error_inner_stride_not_one_" + n, n + "'s last stride 2", S::inner_stride_not_one,
                             [f](l9::NormProblem& p) {
                                 l9::TensorDesc& d = p.*f;
                                 d.stride[d.rank - 1] = 2;
                                 if (d.rank == 2) d.stride[0] = 2 * d.shape[1];
                             }});
        if (n == "weight" || n == "bias") continue;
        if (n != "rstd") {
            cases.push_back({"error_overlapping_rows_" + n + "_stride_cols_minus_1",
                             n + "'s row stride 1023 for 1024 columns: two rows share an element", S::overlapping_rows,
                             [f](l9::NormProblem& p) { (p.*f).stride[0] = 1023; }});
            cases.push_back({"accepts_" + n + "_stride_cols_plus_1", n + "'s row stride 1025 (odd, padded) alone",
                             S::success, [f](l9::NormProblem& p) { (p.*f).stride[0] = 1025; }});
        }
    }
    // 3-D: x (the strided q slice), y (dense) and rstd ([batch, heads]).
    for (const char* n : {"x", "y"}) {
        const bool is_x = std::string(n) == "x";
        const auto f = is_x ? &l9::NormProblem::x : &l9::NormProblem::y;
        cases.push_back({std::string("error_overlapping_rows_3d_") + n + "_head_stride_cols_minus_1",
                         std::string("3-D ") + n + "'s head stride 127 for 128 columns", S::overlapping_rows,
                         [f](l9::NormProblem& p) { (p.*f).stride[1] = 127; }, true});
        cases.push_back({std::string("error_overlapping_rows_3d_") + n + "_batch_stride_heads_extent_minus_1",
                         std::string("3-D ") + n + "'s batch stride 4095 for 32 heads of 128", S::overlapping_rows,
                         [f](l9::NormProblem& p) { (p.*f).stride[0] = 32 * 128 - 1; }, true});
    }
    cases.push_back({"error_overlapping_rows_3d_rstd_batch_stride_heads_minus_1",
                     "3-D rstd [16, 32] with batch stride 31", S::overlapping_rows,
                     [](l9::NormProblem& p) { p.rstd.stride[0] = 31; }, true});
    cases.push_back({"accepts_3d_rstd_padded_batch_stride", "3-D rstd [16, 32] with batch stride 37", S::success,
                     [](l9::NormProblem& p) { p.rstd.stride[0] = 37; }, true});
}

/// Two faults at once, the earlier Status expected: norm_create returns the first rule broken,
/// in the order of the Status values. One case per pair of neighbouring codes.
inline void add_status_order(std::vector<ErrorCase>& cases) {
    using S = l9::Status;
    auto cols_65537 = [](l9::NormProblem& p) {
        for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) {
            d->shape[1] = 65537;
            d->stride[0] = 65537;
        }
        p.weight.shape[0] = p.bias.shape[0] = 65537;
    };
    const std::vector<ErrorCase> order = {
        {"error_order_missing_tensor_before_bad_rank", "weight.data null and x of rank 4", S::missing_tensor,
         [](auto& p) {
             p.weight.data = nullptr;
             p.x.rank = 4;
         }},
        {"error_order_bad_rank_before_negative_dimension", "rstd of rank 2 and a bias of -1 elements", S::bad_rank,
         [](auto& p) {
             p.rstd.rank = 2;
             p.rstd.shape[1] = 1;
             p.rstd.stride[1] = 1;
             p.bias.shape[0] = -1;
         }},
        {"error_order_negative_dimension_before_shape_mismatch", "a weight of -1 elements and y of 63 rows",
         S::negative_dimension,
         [](auto& p) {
             p.weight.shape[0] = -1;
             p.y.shape[0] = 63;
         }},
        {"error_order_shape_mismatch_before_inner_stride", "a bias of 1023 elements and y's last stride 2",
         S::shape_mismatch,
         [](auto& p) {
             p.bias.shape[0] = 1023;
             p.y.stride[1] = 2;
             p.y.stride[0] = 2048;
         }},
        {"error_order_inner_stride_before_overlapping_rows", "weight's stride 2 and y's row stride 1000",
         S::inner_stride_not_one,
         [](auto& p) {
             p.weight.stride[0] = 2;
             p.y.stride[0] = 1000;
         }},
        {"error_order_overlapping_rows_before_dtype", "residual's row stride 1000 and a bias in f16 beside bf16",
         S::overlapping_rows,
         [](auto& p) {
             p.residual.stride[0] = 1000;
             p.bias.dtype = l9::DataType::f16;
         }},
        {"error_order_dtype_before_cols", "rstd in bf16 and 65537 columns", S::unsupported_dtype,
         [cols_65537](auto& p) {
             cols_65537(p);
             p.rstd.dtype = l9::DataType::bf16;
         }},
        {"error_order_cols_before_partial_overlap", "65537 columns and y one element past x", S::cols_out_of_range,
         [cols_65537](auto& p) {
             cols_65537(p);
             p.y.data = byte_ptr(p.x.data) + 2;
         }},
        {"error_order_partial_overlap_before_eps", "residual_out exactly x and eps NaN", S::partial_overlap,
         [](auto& p) {
             p.residual_out.data = p.x.data;
             p.eps = std::numeric_limits<float>::quiet_NaN();
         }},
        {"error_order_eps_before_mode", "eps infinite and mode 7", S::bad_eps,
         [](auto& p) {
             p.eps = std::numeric_limits<float>::infinity();
             p.mode = static_cast<l9::NormMode>(7);
         }},
    };
    cases.insert(cases.end(), order.begin(), order.end());
}

inline std::vector<ErrorCase> error_cases() {
    using S = l9::Status;
    std::vector<ErrorCase> cases = {
        {"error_missing_tensor_x", "x.data is null", S::missing_tensor, [](auto& p) { p.x.data = nullptr; }},
        {"error_missing_tensor_weight", "weight.data is null", S::missing_tensor, [](auto& p) { p.weight.data = nullptr; }},
        {"error_missing_tensor_residual_out_alone", "residual_out given without a residual", S::missing_tensor,
         [](auto& p) { p.residual.data = nullptr; }},
        {"error_missing_tensor_null_out", "the descriptor out-pointer is null", S::missing_tensor, [](auto&) {}, false,
         true},
        {"error_bad_rank_x", "x of rank 4", S::bad_rank, [](auto& p) { p.x.rank = 4; }},
        {"error_bad_rank_y", "y of rank 3 beside a 2-D x", S::bad_rank,
         [](auto& p) {
             p.y.rank = 3;
             p.y.shape[2] = 1;
             p.y.stride[2] = 1;
         }},
        {"error_bad_rank_weight", "a 2-D weight", S::bad_rank,
         [](auto& p) {
             p.weight.rank = 2;
             p.weight.shape[1] = 1;
             p.weight.stride[1] = 1;
         }},
        {"error_bad_rank_rstd", "rstd of x's rank instead of one less", S::bad_rank,
         [](auto& p) {
             p.rstd.rank = 2;
             p.rstd.shape[1] = 1;
             p.rstd.stride[0] = 1;
             p.rstd.stride[1] = 1;
         }},
        {"error_negative_dimension", "x with -3 rows (y and residual too)", S::negative_dimension,
         [](auto& p) { p.x.shape[0] = p.y.shape[0] = p.residual.shape[0] = p.residual_out.shape[0] = p.rstd.shape[0] = -3; }},
        {"error_shape_mismatch_y", "y with one row fewer than x", S::shape_mismatch, [](auto& p) { p.y.shape[0] = 63; }},
        {"error_shape_mismatch_residual", "residual with 1023 columns", S::shape_mismatch,
         [](auto& p) { p.residual.shape[1] = 1023; }},
        {"error_shape_mismatch_weight", "weight of cols + 1 elements", S::shape_mismatch,
         [](auto& p) { p.weight.shape[0] = 1025; }},
        {"error_shape_mismatch_rstd", "rstd of 32 rows for 64", S::shape_mismatch, [](auto& p) { p.rstd.shape[0] = 32; }},
        {"error_shape_mismatch_3d", "3-D y with 31 heads for 32", S::shape_mismatch, [](auto& p) { p.y.shape[1] = 31; },
         true},
        {"error_inner_stride_not_one_x", "x's last stride 2", S::inner_stride_not_one,
         [](auto& p) {
             p.x.stride[1] = 2;
             p.x.stride[0] = 2048;
         }},
        {"error_inner_stride_not_one_weight", "weight's stride 2", S::inner_stride_not_one,
         [](auto& p) { p.weight.stride[0] = 2; }},
        {"error_inner_stride_not_one_3d", "3-D y with last stride 0", S::inner_stride_not_one,
         [](auto& p) { p.y.stride[2] = 0; }, true},
        {"error_overlapping_rows", "x's row stride 1000 for 1024 columns", S::overlapping_rows,
         [](auto& p) { p.x.stride[0] = 1000; }},
        {"error_overlapping_rows_negative", "y's row stride -1024", S::overlapping_rows,
         [](auto& p) { p.y.stride[0] = -1024; }},
        {"error_overlapping_rows_3d", "3-D y whose token stride 2048 is inside its 32 heads of 128", S::overlapping_rows,
         [](auto& p) { p.y.stride[0] = 2048; }, true},
        {"error_unsupported_dtype_y", "y in f32 while x is bf16", S::unsupported_dtype,
         [](auto& p) { p.y.dtype = l9::DataType::f32; }},
        {"error_unsupported_dtype_weight", "weight in f16 while x is bf16", S::unsupported_dtype,
         [](auto& p) { p.weight.dtype = l9::DataType::f16; }},
        {"error_unsupported_dtype_rstd", "rstd in bf16", S::unsupported_dtype,
         [](auto& p) { p.rstd.dtype = l9::DataType::bf16; }},
        {"error_unsupported_dtype_value", "x's dtype is 7, not a DataType", S::unsupported_dtype,
         [](auto& p) { p.x.dtype = static_cast<l9::DataType>(7); }},
        {"error_cols_out_of_range", "65537 columns", S::cols_out_of_range,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) {
                 d->shape[1] = 65537;
                 d->stride[0] = 65537;
             }
             p.weight.shape[0] = p.bias.shape[0] = 65537;
         }},
        {"error_cols_zero", "0 columns", S::cols_out_of_range,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) d->shape[1] = 0;
             p.weight.shape[0] = p.bias.shape[0] = 0;
         }},
        {"error_partial_overlap_y_shifted", "y one element past x: they share all but one element",
         S::partial_overlap, [](auto& p) { p.y.data = byte_ptr(p.x.data) + 2; }},
        {"error_partial_overlap_y_other_strides", "y at x's address with another row stride", S::partial_overlap,
         [](auto& p) {
             p.y.data = p.x.data;
             p.y.stride[0] = 2048;
         }},
        {"error_partial_overlap_y_is_residual", "y exactly the residual (only y == x is allowed)", S::partial_overlap,
         [](auto& p) { p.y.data = p.residual.data; }},
        {"error_partial_overlap_residual_out_is_x", "residual_out exactly x", S::partial_overlap,
         [](auto& p) { p.residual_out.data = p.x.data; }},
        {"error_partial_overlap_outputs", "y and residual_out overlap by one row", S::partial_overlap,
         [](auto& p) { p.residual_out.data = byte_ptr(p.y.data) + 63 * 1024 * 2; }},
        {"error_partial_overlap_rstd_in_y", "rstd inside y's last row", S::partial_overlap,
         [](auto& p) { p.rstd.data = byte_ptr(p.y.data) + 63 * 1024 * 2; }},
        {"error_partial_overlap_y_weight", "y overlapping the weight", S::partial_overlap,
         [](auto& p) { p.weight.data = byte_ptr(p.y.data) + 100; }},
        {"error_partial_overlap_3d_interleaved", "3-D y in the padding of x's qkv slice (spans meet)",
         S::partial_overlap, [](auto& p) { p.y.data = byte_ptr(p.x.data) + 32 * 128 * 2; }, true},
        {"error_bad_eps", "eps = -1e-5", S::bad_eps, [](auto& p) { p.eps = -1e-5f; }},
        {"error_bad_eps_nan", "eps is NaN", S::bad_eps, [](auto& p) { p.eps = std::numeric_limits<float>::quiet_NaN(); }},
        {"error_bad_mode", "mode 2", S::bad_mode, [](auto& p) { p.mode = static_cast<l9::NormMode>(2); }},
        // Valid problems at the edges of the rules: norm_create must accept them.
        {"accepts_exact_aliases", "y == x and residual_out == residual", S::success,
         [](auto& p) {
             p.y.data = p.x.data;
             p.residual_out.data = p.residual.data;
         }},
        {"accepts_shared_inputs", "x and residual the same memory (inputs may share)", S::success,
         [](auto& p) { p.residual.data = p.x.data; }},
        {"accepts_adjacent_outputs", "residual_out starting right after y's last byte", S::success,
         [](auto& p) { p.residual_out.data = byte_ptr(p.y.data) + 64 * 1024 * 2; }},
        {"accepts_rows_zero", "zero rows", S::success,
         [](auto& p) { p.x.shape[0] = p.y.shape[0] = p.residual.shape[0] = p.residual_out.shape[0] = p.rstd.shape[0] = 0; }},
        {"accepts_minimal", "RMSNorm with x, weight and y only, weight in T", S::success,
         [](auto& p) {
             p.residual = {};
             p.residual_out = {};
             p.bias = {};
             p.rstd = {};
             p.weight.dtype = l9::DataType::bf16;
         }},
        {"accepts_transposed_outer_dims", "3-D x whose head stride exceeds its batch stride", S::success,
         [](auto& p) {
             p.x.stride[0] = 128;
             p.x.stride[1] = 16 * 128;
         },
         true},
        {"accepts_3d_in_place", "3-D in place on the q slice of a qkv tensor", S::success,
         [](auto& p) {
             p.y = p.x;
         },
         true},
        // The rest of the rules, each at its boundary.
        {"error_missing_tensor_y", "y.data is null", S::missing_tensor, [](auto& p) { p.y.data = nullptr; }},
        {"accepts_absent_tensors_fields_ignored", "bias and rstd absent (data null) with nonsense in every other field",
         S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.bias, &p.rstd}) {
                 d->data = nullptr;
                 d->dtype = static_cast<l9::DataType>(9);
                 d->rank = 5;
                 d->shape[0] = -7;
                 d->stride[0] = 0;
             }
         }},
        {"accepts_absent_tensors_overlapping_rows_ignored",
         "residual and residual_out absent (data null) with x's shape and row strides 1000 and -1024", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.residual, &p.residual_out}) d->data = nullptr;
             p.residual.stride[0] = 1000;
             p.residual_out.stride[0] = -1024;
         }},
        {"accepts_absent_tensor_span_ignored",
         "the bias absent (data null) with 2^46 fp32 elements: a span from address 0 past every tensor", S::success,
         [](auto& p) {
             p.bias.data = nullptr;
             p.bias.dtype = l9::DataType::f32;
             p.bias.shape[0] = int64_t(1) << 46;
         }},
        {"accepts_shape_entries_past_rank_ignored",
         "every shape entry past its tensor's rank is -1: those entries are not dimensions", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.weight, &p.bias, &p.y, &p.residual_out, &p.rstd})
                 for (int k = d->rank; k < 3; ++k) d->shape[k] = -1;
         }},
        {"error_bad_rank_residual", "a residual of rank 3 beside a 2-D x", S::bad_rank,
         [](auto& p) {
             p.residual.rank = 3;
             p.residual.shape[2] = 1;
             p.residual.stride[2] = 1;
         }},
        {"error_bad_rank_bias", "a bias of rank 2", S::bad_rank,
         [](auto& p) {
             p.bias.rank = 2;
             p.bias.shape[1] = 1;
             p.bias.stride[1] = 1;
         }},
        {"error_bad_rank_rstd_3d", "rstd of rank 1 beside a 3-D x", S::bad_rank,
         [](auto& p) {
             p.rstd.rank = 1;
             p.rstd.shape[0] = 16 * 32;
             p.rstd.stride[0] = 1;
         },
         true},
        {"error_negative_dimension_weight", "a weight of -1 elements", S::negative_dimension,
         [](auto& p) { p.weight.shape[0] = -1; }},
        {"error_negative_dimension_3d_heads", "3-D x, y and rstd with -1 heads", S::negative_dimension,
         [](auto& p) { p.x.shape[1] = p.y.shape[1] = p.rstd.shape[1] = -1; }, true},
        {"error_shape_mismatch_residual_out", "residual_out with one row more than x", S::shape_mismatch,
         [](auto& p) { p.residual_out.shape[0] = 65; }},
        {"error_shape_mismatch_bias", "a bias of cols - 1 elements", S::shape_mismatch,
         [](auto& p) { p.bias.shape[0] = 1023; }},
        {"error_shape_mismatch_rstd_3d", "3-D rstd [16, 31] for 32 heads", S::shape_mismatch,
         [](auto& p) { p.rstd.shape[1] = 31; }, true},
        {"accepts_single_row_small_stride", "one row whose stride (1) is below cols: no second row to meet",
         S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) d->shape[0] = 1;
             p.rstd.shape[0] = 1;
             p.x.stride[0] = 1;
             p.y.stride[0] = 0;
         }},
        {"accepts_3d_single_batch_small_stride", "3-D x of batch 1 with batch stride 0", S::success,
         [](auto& p) {
             p.x.shape[0] = p.y.shape[0] = p.rstd.shape[0] = 1;
             p.x.stride[0] = 0;
         },
         true},
        {"accepts_3d_zero_heads", "3-D x of 16 batches of 0 heads: no rows", S::success,
         [](auto& p) { p.x.shape[1] = p.y.shape[1] = p.rstd.shape[1] = 0; }, true},
        {"accepts_3d_zero_batch", "3-D x of batch 0", S::success,
         [](auto& p) { p.x.shape[0] = p.y.shape[0] = p.rstd.shape[0] = 0; }, true},
        {"error_unsupported_dtype_residual", "a residual in f16 beside bf16 x", S::unsupported_dtype,
         [](auto& p) { p.residual.dtype = l9::DataType::f16; }},
        {"error_unsupported_dtype_residual_out", "residual_out in f32 beside bf16 x", S::unsupported_dtype,
         [](auto& p) { p.residual_out.dtype = l9::DataType::f32; }},
        {"error_unsupported_dtype_bias", "a bias in f16 beside bf16 x", S::unsupported_dtype,
         [](auto& p) { p.bias.dtype = l9::DataType::f16; }},
        {"error_unsupported_dtype_weight_value", "the weight's dtype is -1, not a DataType", S::unsupported_dtype,
         [](auto& p) { p.weight.dtype = static_cast<l9::DataType>(-1); }},
        {"accepts_weight_t_bias_f32", "weight in T and bias in f32: each parameter's type is its own", S::success,
         [](auto& p) {
             p.weight.dtype = l9::DataType::bf16;
             p.bias.dtype = l9::DataType::f32;
         }},
        {"accepts_f16_activations", "x, residual, y, residual_out in f16, weight f16, bias f32", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out, &p.weight}) d->dtype = l9::DataType::f16;
             p.bias.dtype = l9::DataType::f32;
         }},
        {"accepts_f32_activations", "every tensor in f32", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out, &p.weight, &p.bias})
                 d->dtype = l9::DataType::f32;
         }},
        {"accepts_cols_max", "65536 columns, kMaxCols", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) {
                 d->shape[1] = 65536;
                 d->stride[0] = 65536;
             }
             p.weight.shape[0] = p.bias.shape[0] = 65536;
         }},
        {"accepts_cols_1", "1 column", S::success,
         [](auto& p) {
             for (l9::TensorDesc* d : {&p.x, &p.residual, &p.y, &p.residual_out}) {
                 d->shape[1] = 1;
                 d->stride[0] = 1;
             }
             p.weight.shape[0] = p.bias.shape[0] = 1;
         }},
        {"accepts_eps_zero", "eps = 0", S::success, [](auto& p) { p.eps = 0.0f; }},
        {"accepts_eps_max_finite", "eps = FLT_MAX, the largest finite", S::success,
         [](auto& p) { p.eps = std::numeric_limits<float>::max(); }},
        {"error_bad_eps_smallest_negative", "eps = -FLT_TRUE_MIN, the negative closest to 0", S::bad_eps,
         [](auto& p) { p.eps = -std::numeric_limits<float>::denorm_min(); }},
        {"error_bad_eps_inf", "eps = +inf", S::bad_eps, [](auto& p) { p.eps = std::numeric_limits<float>::infinity(); }},
        {"accepts_mode_rms", "mode rms (the valid problem is layer)", S::success,
         [](auto& p) { p.mode = l9::NormMode::rms; }},
        {"error_bad_mode_negative", "mode -1", S::bad_mode, [](auto& p) { p.mode = static_cast<l9::NormMode>(-1); }},
        // 3-D spans (x is the strided q slice) met by one element, and touched without meeting.
        {"error_partial_overlap_3d_y_starts_at_x_last_element", "3-D y's first element is x's last",
         S::partial_overlap, [](auto& p) { p.y.data = byte_ptr(p.x.data) + span_bytes(p.x) - 2; }, true},
        {"error_partial_overlap_3d_y_ends_at_x_first_element", "3-D y's last element is x's first",
         S::partial_overlap, [](auto& p) { p.y.data = byte_ptr(p.x.data) - span_bytes(p.y) + 2; }, true},
        {"accepts_3d_y_right_after_x", "3-D y starting at the byte after x's span", S::success,
         [](auto& p) { p.y.data = byte_ptr(p.x.data) + span_bytes(p.x); }, true},
    };
    add_one_element_overlaps(cases);
    add_stride_faults(cases);
    add_status_order(cases);
    return cases;
}

}  // namespace workbook::production
