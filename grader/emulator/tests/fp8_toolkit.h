/// @file fp8_toolkit.h
/// @brief The CUDA toolkit's fp8 conversions on plain integer and floating types (fp8_toolkit.cpp).
#pragma once

#include <cstdint>

#define FP8_TOOLKIT_API __attribute__((visibility("default")))

namespace fp8_toolkit {

/// __nv_cvt_float_to_fp8 (saturate: __NV_SATFINITE, else __NV_NOSAT; e4m3, else e5m2).
FP8_TOOLKIT_API uint8_t from_float(float v, bool saturate, bool e4m3);
/// __nv_cvt_double_to_fp8.
FP8_TOOLKIT_API uint8_t from_double(double v, bool saturate, bool e4m3);
/// __nv_cvt_float2_to_fp8x2 of (lo, hi).
FP8_TOOLKIT_API uint16_t from_float2(float lo, float hi, bool saturate, bool e4m3);
/// __nv_cvt_halfraw_to_fp8 of the fp16 bits `h`.
FP8_TOOLKIT_API uint8_t from_half_bits(uint16_t h, bool saturate, bool e4m3);
/// __nv_cvt_bfloat16raw_to_fp8 of the bf16 bits `b`.
FP8_TOOLKIT_API uint8_t from_bf16_bits(uint16_t b, bool saturate, bool e4m3);
/// __nv_cvt_fp8_to_halfraw: the fp16 bits of an fp8 byte.
FP8_TOOLKIT_API uint16_t to_half_bits(uint8_t b, bool e4m3);
/// __nv_cvt_fp8x2_to_halfraw2: the low byte's fp16 bits in the low half.
FP8_TOOLKIT_API uint32_t pair_to_half_bits(uint16_t two, bool e4m3);
/// __nv_fp8_e4m3(float).__x and float(__nv_fp8_e4m3).
FP8_TOOLKIT_API uint8_t e4m3_of(float v);
FP8_TOOLKIT_API float float_of_e4m3(uint8_t b);

}  // namespace fp8_toolkit
