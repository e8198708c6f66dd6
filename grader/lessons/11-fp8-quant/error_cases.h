/// @file fp8_error_cases.h
/// @brief Lesson 11's invalid calls: one wrong argument each, and cudaErrorInvalidValue expected.
///
/// Host code only: a call the contract refuses must be refused before any device work, so the
/// same table serves the grader's cases (on real buffers, with the launches recorded) and the CPU
/// test of the reference's validation (on fake addresses, without a GPU).
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
    add("error_x_stride_below_cols", "x_row_stride 63 for rows of 64: rows would overlap").x_stride = 63;
    add("error_q_stride_below_cols", "q_row_stride 32 for rows of 64").q_stride = 32;
    add("error_clip_zero", "clip = 0").clip = 0.0f;
    add("error_clip_negative", "clip = -1").clip = -1.0f;
    add("error_clip_nan", "clip = NaN").clip = nan;
    add("error_eps_negative", "eps = -1e-5").eps = -1e-5f;
    add("error_eps_nan", "eps = NaN").eps = nan;
    add("error_null_x", "x = nullptr").null_x = true;
    add("error_null_weight", "weight = nullptr").null_weight = true;
    add("error_null_q", "q = nullptr").null_q = true;
    add("error_null_scale", "scale = nullptr").null_scale = true;
    return v;
}

}  // namespace workbook::fp8
