/// @file fp8_toolkit.cpp
/// @brief The CUDA toolkit's own fp8 conversions (cuda_fp8.h's host code), for test_fp8.cpp to
///        compare the emulator's with.
///
/// Built as its own shared library with hidden symbols: the toolkit's __half and fp8 types have
/// the same names as the emulator's, and each side must keep its own inline functions.
#include "fp8_toolkit.h"

#include <cuda_fp8.h>

namespace fp8_toolkit {
namespace {
__nv_saturation_t sat(bool saturate) { return saturate ? __NV_SATFINITE : __NV_NOSAT; }
__nv_fp8_interpretation_t kind(bool e4m3) { return e4m3 ? __NV_E4M3 : __NV_E5M2; }
}  // namespace

uint8_t from_float(float v, bool saturate, bool e4m3) { return __nv_cvt_float_to_fp8(v, sat(saturate), kind(e4m3)); }

uint8_t from_double(double v, bool saturate, bool e4m3) {
    return __nv_cvt_double_to_fp8(v, sat(saturate), kind(e4m3));
}

uint16_t from_float2(float lo, float hi, bool saturate, bool e4m3) {
    return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), sat(saturate), kind(e4m3));
}

uint8_t from_half_bits(uint16_t h, bool saturate, bool e4m3) {
    __half_raw raw;
    raw.x = h;
    return __nv_cvt_halfraw_to_fp8(raw, sat(saturate), kind(e4m3));
}

uint8_t from_bf16_bits(uint16_t b, bool saturate, bool e4m3) {
    __nv_bfloat16_raw raw;
    raw.x = b;
    return __nv_cvt_bfloat16raw_to_fp8(raw, sat(saturate), kind(e4m3));
}

uint16_t to_half_bits(uint8_t b, bool e4m3) { return __nv_cvt_fp8_to_halfraw(b, kind(e4m3)).x; }

uint32_t pair_to_half_bits(uint16_t two, bool e4m3) {
    const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(two, kind(e4m3));
    return static_cast<uint32_t>(r.x) | (static_cast<uint32_t>(r.y) << 16);
}

uint8_t e4m3_of(float v) { return __nv_fp8_e4m3(v).__x; }

float float_of_e4m3(uint8_t b) {
    __nv_fp8_e4m3 q;
    q.__x = b;
    return static_cast<float>(q);
}

}  // namespace fp8_toolkit
