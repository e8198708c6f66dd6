/// @file production_error_cases.h
/// @brief Lesson 9's descriptor cases: problems with exactly one fault, each with the Status
///        norm_create must return, and valid problems at the edges of the rules.
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

struct ErrorCase {
    std::string name, what;
    l9::Status expected;
    std::function<void(l9::NormProblem&)> mutate;
    bool three_d = false;
    bool null_out = false;
};

inline std::vector<ErrorCase> error_cases() {
    using S = l9::Status;
    return {
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
    };
}

}  // namespace workbook::production
