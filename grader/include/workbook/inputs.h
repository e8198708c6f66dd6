/**
 * @file inputs.h
 * @brief Where each row lives in memory, and the value of every input element.
 *
 * Inputs are pure functions of (seed, tensor, row, col): the fill kernels write them, and
 * the oracles recompute them instead of reading buffers the submission may have touched.
 * That keeps the oracle honest for in-place calls and lets it check inputs for changes.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "workbook/e4m3.h"
#include "workbook/hd.h"

namespace workbook {

/// Element (row, col) sits at offset(row, col) elements from the tensor's first element.
/// Rows come in groups of `heads` (lesson 6's heads of one token; 1 elsewhere).
struct Layout {
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t heads = 1;         ///< rows per group
    int64_t outer_stride = 0;  ///< elements between groups (row stride, or token stride)
    int64_t inner_stride = 0;  ///< elements between rows of one group (head stride)

    /// Contiguous or strided rows, one row per group.
    static Layout rows_of(int64_t rows, int64_t cols, int64_t row_stride) {
        return Layout{rows, cols, 1, row_stride, cols};
    }
    /// [tokens, heads, head_dim] with token and head strides.
    static Layout heads_of(int64_t tokens, int64_t heads, int64_t head_dim, int64_t token_stride,
                           int64_t head_stride) {
        return Layout{tokens * heads, head_dim, heads, token_stride, head_stride};
    }

    WB_HD int64_t offset(int64_t row, int64_t col) const {
        return (row / heads) * outer_stride + (row % heads) * inner_stride + col;
    }
    /// Elements from the first to one past the last owned element.
    WB_HD int64_t span() const { return rows == 0 ? 0 : offset(rows - 1, cols - 1) + 1; }
    /// True when element `e` (from the first element) belongs to some row.
    WB_HD bool owns(int64_t e) const {
        const int64_t group = e / outer_stride;
        const int64_t rest = e % outer_stride;
        if (heads == 1) return group < rows && rest < cols;
        const int64_t head = rest / inner_stride;
        return group < rows / heads && head < heads && rest % inner_stride < cols;
    }
};

/// What one input tensor holds: uniform magnitudes in [lo, hi] with random signs, plus
/// optional all-zero rows and one NaN. Row-independent when `per_col` (the weight).
struct ValueSpec {
    uint64_t seed = 1;
    uint32_t tensor = 0;
    float lo = 0.0f;
    float hi = 2.0f;
    bool per_col = false;
    int64_t zero_period = 0;  ///< rows with row % zero_period == 1 are all zero (0: none)
    int64_t nan_row = -1;     ///< this (row, nan_col) element is NaN (-1: none)
    int64_t nan_col = 0;
    float offset = 0.0f;      ///< added to every value: a row mean far from zero (LayerNorm's hard case)
    float outlier = 0.0f;     ///< non-zero: one element per row (a column hashed from the row) has this magnitude
    bool outlier_last = false;  ///< with `outlier`: the row's last column holds it, not a hashed one
    /// With `outlier`: every column c with c % comb_period == row % comb_period holds it, not one
    /// column (0: one). Over comb_period rows every column is an outlier in exactly one row.
    int64_t comb_period = 0;
    int32_t e4m3_values = 0;  ///< lesson 11: 1 every value an e4m3 number, 2 a midpoint of two e4m3
                              ///< neighbours; either way one element per row is ±448
};

/// A quiet NaN, built without host-only or device-only intrinsics.
WB_HD inline float quiet_nan() {
    union {
        uint32_t bits;
        float value;
    } u{0x7fc00000u};
    return u.value;
}

/// splitmix64's finaliser: a cheap, well-mixed 64-bit hash.
WB_HD inline uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// Seed of repetition `rep` of the case `name`, derived from the run's seed (the one `--seed` reproduces).
inline uint64_t derive_seed(uint64_t run_seed, const char* name, int rep) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the case name
    for (; *name; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 1099511628211ull;
    return mix64(run_seed ^ mix64(h + static_cast<uint64_t>(rep)));
}

/// The unrounded value of element (row, col); cols is the logical row length.
WB_HD WB_PURE inline float raw_value(const ValueSpec& s, int64_t row, int64_t col, int64_t cols) {
    if (!s.per_col) {
        if (row == s.nan_row && col == s.nan_col) return quiet_nan();
        if (s.zero_period > 0 && row % s.zero_period == 1) return 0.0f;
    }
    const uint64_t index = s.per_col ? static_cast<uint64_t>(col)
                                     : static_cast<uint64_t>(row) * static_cast<uint64_t>(cols) + col;
    const uint64_t h = mix64(s.seed ^ mix64(0x5bd1e995ull * (s.tensor + 1) + index));
    if (!s.per_col && (s.outlier != 0.0f || s.e4m3_values != 0)) {
        // The row's special column (or columns, a comb): its outlier, or its ±448.
        const uint64_t special = mix64(s.seed ^ mix64(0x2545f491ull * (s.tensor + 1) + static_cast<uint64_t>(row)));
        const int64_t special_col =
            s.outlier_last ? cols - 1 : static_cast<int64_t>(special % static_cast<uint64_t>(cols));
        const bool special_here =
            s.comb_period > 0 ? col % s.comb_period == row % s.comb_period : col == special_col;
        if (special_here) {
            const float m = s.e4m3_values != 0 ? 448.0f : s.outlier;
            return (h & 1) ? -m : m;
        }
        if (s.e4m3_values != 0) {
            // An e4m3 number 0x01..0x7d, or the midpoint between it and the next one (at most 432).
            const uint8_t b = static_cast<uint8_t>(1 + (h >> 8) % 125);
            double m = e4m3_to_double(b);
            if (s.e4m3_values == 2) m = 0.5 * (m + e4m3_to_double(static_cast<uint8_t>(b + 1)));
            return static_cast<float>((h & 1) ? -m : m);
        }
    }
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
    const float magnitude = s.lo + (s.hi - s.lo) * u;
    const float signed_value = (h & 1) ? -magnitude : magnitude;
    return s.offset == 0.0f ? signed_value : s.offset + signed_value;
}

/// Conversions between T and float that work in host and device code.
template <typename T>
struct Elem;
template <>
struct Elem<float> {
    WB_HD static float from_float(float v) { return v; }
    WB_HD static float to_float(float v) { return v; }
};
template <>
struct Elem<__half> {
    WB_HD static __half from_float(float v) { return __float2half_rn(v); }
    WB_HD static float to_float(__half v) { return __half2float(v); }
};
template <>
struct Elem<__nv_bfloat16> {
    WB_HD static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
    WB_HD static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
};

/// Lesson 11's q: an e4m3 byte, rounded to nearest and saturated as the lesson's contract says.
template <>
struct Elem<E4m3> {
    WB_HD static E4m3 from_float(float v) { return E4m3{e4m3_bits_of(e4m3_round(v))}; }
    WB_HD static float to_float(E4m3 v) { return static_cast<float>(e4m3_to_double(v.bits)); }
};

/// The value of element (row, col) exactly as stored in a tensor of type T.
template <typename T>
WB_HD inline float input_value(const ValueSpec& s, int64_t row, int64_t col, int64_t cols) {
    return Elem<T>::to_float(Elem<T>::from_float(raw_value(s, row, col, cols)));
}

}  // namespace workbook
