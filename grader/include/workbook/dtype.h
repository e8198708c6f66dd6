/**
 * @file dtype.h
 * @brief Element types of the lessons, their names and their rounding.
 */
#pragma once

#include <cstddef>
#include <string>

namespace workbook {

/// The element types a lesson can be graded in, and e4m3: lesson 11's quantised output (never an input).
enum class DType { f32, f16, bf16, e4m3 };

/// Short name used in case names, tables and JSON ("f32", "f16", "bf16").
inline const char* dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::e4m3: return "e4m3";
    }
    return "?";
}

/// Bytes per element.
inline std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : t == DType::e4m3 ? 1 : 2; }

/// Distance from 1 to the next representable number: the relative size of one unit in the last place.
inline double dtype_ulp(DType t) {
    switch (t) {
        case DType::f32: return 1.0 / (1 << 23);
        case DType::f16: return 1.0 / (1 << 10);
        case DType::bf16: return 1.0 / (1 << 7);
        case DType::e4m3: return 1.0 / (1 << 3);
    }
    return 0.0;
}

}  // namespace workbook
