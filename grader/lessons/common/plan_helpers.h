/// @file lesson_plans.h
/// @brief Shared pieces of the lessons' case tables: input families, weights, typed entry points.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/lesson_registry.h"
#include "workbook/dtype.h"
#include "workbook/inputs.h"

namespace workbook {


/// The rows a benchmark shape is checked with under `opt` (all of them on a GPU, and on the CPU
/// emulator where it samples the call's blocks). `engine_checks`: the call is judged by the engine's
/// own checks only, so the emulator can sample it.
inline int64_t checked_bench_rows(int64_t rows, int64_t cols, const PlanOptions& opt, bool engine_checks = true) {
    if (opt.sampled_calls && engine_checks) return rows;
    if (opt.max_checked_bench_elements <= 0 || rows * cols <= opt.max_checked_bench_elements) return rows;
    return std::max<int64_t>(1, opt.max_checked_bench_elements / cols);
}

/// The `what` line of a checked benchmark shape, saying so when its rows were cut.
inline std::string checked_bench_what(int64_t rows, int64_t checked_rows) {
    std::string what = "a benchmark shape, checked like any case";
    if (checked_rows != rows)
        what += " (on the CPU emulator with its first " + std::to_string(checked_rows) + (checked_rows == 1 ? " row" : " rows") + ")";
    return what;
}

/// The families of input values the cases use.
enum class InputKind {
    normal,     ///< magnitudes uniform in [0, 2), random signs
    zero_rows,  ///< every other row all zeros
    nan_row,    ///< one NaN in one row
    huge,       ///< magnitudes in [30000, 65504]: fp16 squares overflow an fp16 accumulator
    small,      ///< magnitudes below 0.01, where eps matters
    outlier_last,  ///< each row's last element 256 (the rest below 2): a sum that skips the row's end is far off
    /// in row r every column c with c % rows == r % rows is 256 (the rest below 2): over the rows, every
    /// column dominates one row, so an element counted twice or skipped anywhere leaves some row far off
    comb,
};

/// The input x (or residual, with another `tensor` id) of a case.
inline ValueSpec input_spec(InputKind kind, uint64_t seed, uint32_t tensor, int64_t rows) {
    ValueSpec s;
    s.seed = seed;
    s.tensor = tensor;
    switch (kind) {
        case InputKind::normal: break;
        case InputKind::zero_rows: s.zero_period = 2; break;
        case InputKind::nan_row:
            s.nan_row = std::min<int64_t>(37, rows - 1);
            s.nan_col = 5;
            break;
        case InputKind::huge:
            s.lo = 30000.0f;
            s.hi = 65504.0f;
            break;
        case InputKind::small: s.hi = 0.01f; break;
        case InputKind::outlier_last:
            s.outlier = 256.0f;
            s.outlier_last = true;
            break;
        case InputKind::comb:
            s.outlier = 256.0f;
            s.comb_period = rows;
            break;
    }
    return s;
}

/// Rows whose mean is large beside their spread, LayerNorm's hard case, as far as T resolves
/// it: mean 1000, spread ±2 in f32 and f16; in bf16 (8 significant bits) mean 256, spread ±16.
/// One-pass E[s²] − E[s]² fails here in f32 and f16, a mean rounded to T in f16 and bf16.
inline void make_large_mean(ValueSpec& s, DType t) {
    s.offset = t == DType::bf16 ? 256.0f : 1000.0f;
    s.lo = 0.0f;
    s.hi = t == DType::bf16 ? 16.0f : 2.0f;
}

/// The weight: magnitudes in [0.25, 2), random signs, one value per column.
inline ValueSpec weight_spec(uint64_t seed) {
    ValueSpec s;
    s.seed = seed;
    s.tensor = 7;
    s.lo = 0.25f;
    s.hi = 2.0f;
    s.per_col = true;
    return s;
}

/// `wrap` applied to the table's entry point for `dtype`; every typed table lists f32, f16, bf16.
template <typename Table, typename Wrap>
auto typed_entry(const Table& table, DType dtype, Wrap&& wrap) {
    switch (dtype) {
        case DType::f16: return wrap(table.f16);
        case DType::bf16: return wrap(table.bf16);
        default: return wrap(table.f32);
    }
}

}  // namespace workbook
