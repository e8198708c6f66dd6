/// @file fp8_error_cases.h
/// @brief Lesson 11's calls on the edge of its validation: the invalid ones (one wrong argument
///        each, cudaErrorInvalidValue expected) and the valid ones beside them.
///
/// Host code only: a call the contract refuses must be refused before any device work, so the
/// same table serves the grader's cases (on real buffers, with the launches recorded) and the CPU
/// test of the reference's validation (on fake addresses, without a GPU). The valid calls at the
/// boundaries (valid_boundary_calls) are graded as ordinary cases, their outputs checked; the CPU
/// test checks that the reference does not refuse them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace workbook::fp8 {

/// One invalid call: a valid one (4 rows of 64, strides 64, eps 1e-5, no clip) with one argument changed.
struct ErrorCase {
    std::string name, what;
    int64_t rows = 4, cols = 64, x_stride = 64, q_stride = 64;
    float eps = 1e-5f, clip = std::numeric_limits<float>::infinity();
    bool null_x = false, null_weight = false, null_q = false, null_scale = false;
};

inline std::vector<ErrorCase> error_cases() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<ErrorCase> v;
    auto add = [&](const char* name, const char* what) -> ErrorCase& {
        v.push_back(ErrorCase{name, what});
        return v.back();
    };
    add("error_negative_rows", "rows = -1").rows = -1;
    add("error_cols_zero", "cols = 0").cols = 0;
    {
        ErrorCase& e = add("error_cols_over_max", "cols = 65537, past kMaxCols");
        e.cols = e.x_stride = e.q_stride = 65537;
    }
    // Two rows: the fewest for which a stride below cols is refused.
    {
        ErrorCase& e = add("error_x_stride_below_cols", "x_row_stride 63 for 2 rows of 64: the rows would overlap");
        e.rows = 2;
        e.x_stride = 63;
    }
    {
        ErrorCase& e = add("error_q_stride_below_cols", "q_row_stride 63 for 2 rows of 64: the rows would overlap");
        e.rows = 2;
        e.q_stride = 63;
    }
    add("error_clip_zero", "clip = 0").clip = 0.0f;
    add("error_clip_negative_zero", "clip = -0.0, not above 0 either").clip = -0.0f;
    add("error_clip_negative", "clip = -1").clip = -1.0f;
    add("error_clip_nan", "clip = NaN").clip = nan;
    add("error_eps_negative", "eps = -1e-5").eps = -1e-5f;
    add("error_eps_smallest_negative", "eps = -1.4e-45, the negative number nearest 0").eps =
        -std::numeric_limits<float>::denorm_min();
    add("error_eps_nan", "eps = NaN").eps = nan;
    add("error_null_x", "x = nullptr").null_x = true;
    add("error_null_weight", "weight = nullptr").null_weight = true;
    add("error_null_q", "q = nullptr").null_q = true;
    add("error_null_scale", "scale = nullptr").null_scale = true;
    return v;
}

/// Valid calls on the boundaries of the refusals above, each the first valid value beside a first
/// invalid one: the reference must accept them. Rows of 1024 columns (the grader checks their
/// outputs); rows = 0 with every pointer null launches nothing and succeeds.
inline std::vector<ErrorCase> valid_boundary_calls() {
    std::vector<ErrorCase> v;
    auto add = [&](std::string name, std::string what) -> ErrorCase& {
        ErrorCase e{std::move(name), std::move(what)};
        e.rows = 260;
        e.cols = e.x_stride = e.q_stride = 1024;
        v.push_back(e);
        return v.back();
    };
    add("eps_zero", "eps = 0, the smallest valid eps (error_eps_smallest_negative's neighbour)").eps = 0.0f;
    add("clip_infinity_no_clip", "clip = +infinity, valid: no clip, the scale is max|y|/448");
    {
        ErrorCase& e = add("rows_zero_null_pointers", "rows = 0 with x, weight, q and scale all null: nothing to "
                                                      "read or write, so cudaSuccess and no launch");
        e.rows = 0;
        e.null_x = e.null_weight = e.null_q = e.null_scale = true;
    }
    // A stride below cols is refused only when there is a second row: for each strided tensor,
    // a single row whose stride is 1.
    for (const char* tensor : {"x", "q"}) {
        const std::string t = tensor;
        ErrorCase& e = add(t + "_single_row_stride_below_cols",
                           "one row of 1024 with " + t + "_row_stride = 1: valid, as only a second row would overlap");
        e.rows = 1;
        (t == "x" ? e.x_stride : e.q_stride) = 1;
    }
    return v;
}

}  // namespace workbook::fp8
