/// @file cuda_fp8.h
/// @brief The emulator's fp8 (lesson 11): __nv_fp8_e4m3, __nv_fp8_e5m2, their pairs and
///        quadruples, and cuda_fp8.h's conversion functions, with the GPU's rounding (to nearest
///        even), saturation (__NV_SATFINITE) and NaNs (emu/fp8_bits.h).
///
/// Not provided: e8m0 and the integer conversions out of fp8.
#pragma once

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "emu/fp8_bits.h"
#include "emu/vector_types.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;

typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace emu {
inline const Fp8Format& fp8_format(__nv_fp8_interpretation_t k) { return k == __NV_E4M3 ? kE4m3Format : kE5m2Format; }
/// Two converted bytes as one pair: `lo` in the low byte, as cvt.rn.satfinite.e4m3x2 packs them.
inline __nv_fp8x2_storage_t fp8_pair(__nv_fp8_storage_t lo, __nv_fp8_storage_t hi) {
    return static_cast<__nv_fp8x2_storage_t>(lo | (hi << 8));
}
}  // namespace emu

// ---- the C-style conversions -------------------------------------------------------------

inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return emu::double_to_fp8_bits(x, s == __NV_SATFINITE, emu::fp8_format(k));
}
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return emu::fp8_pair(__nv_cvt_double_to_fp8(x.x, s, k), __nv_cvt_double_to_fp8(x.y, s, k));
}
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return emu::float_to_fp8_bits(x, s == __NV_SATFINITE, emu::fp8_format(k));
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return emu::fp8_pair(__nv_cvt_float_to_fp8(x.x, s, k), __nv_cvt_float_to_fp8(x.y, s, k));
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(emu::fp8_half_bits_to_float(x.x), s, k);
}
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t s,
                                                        __nv_fp8_interpretation_t k) {
    return emu::fp8_pair(__nv_cvt_halfraw_to_fp8(__half_raw{x.x}, s, k), __nv_cvt_halfraw_to_fp8(__half_raw{x.y}, s, k));
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s,
                                                       __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(emu::bf16_bits_to_float(x.x), s, k);
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t s,
                                                            __nv_fp8_interpretation_t k) {
    return emu::fp8_pair(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.x}, s, k),
                         __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.y}, s, k));
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
    return __half_raw{emu::fp8_to_half_bits(x, emu::fp8_format(k))};
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
    return __half2_raw{__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(x & 0xff), k).x,
                       __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(x >> 8), k).x};
}

// ---- the types ---------------------------------------------------------------------------
// As in the toolkit: conversions into fp8 saturate (__NV_SATFINITE) and are explicit, as are
// those out of it; `__x` holds the bits.

#define EMU_FP8_SCALAR(name, kind)                                                                              \
    struct __attribute__((aligned(1))) name {                                                                   \
        __nv_fp8_storage_t __x;                                                                                 \
        name() = default;                                                                                       \
        explicit name(__half f) : __x(__nv_cvt_halfraw_to_fp8(static_cast<__half_raw>(f), __NV_SATFINITE, kind)) {} \
        explicit name(__nv_bfloat16 f)                                                                          \
            : __x(__nv_cvt_bfloat16raw_to_fp8(static_cast<__nv_bfloat16_raw>(f), __NV_SATFINITE, kind)) {}      \
        explicit name(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, kind)) {}                         \
        explicit name(double f) : __x(__nv_cvt_double_to_fp8(f, __NV_SATFINITE, kind)) {}                       \
        explicit name(int v) : name(static_cast<float>(v)) {}                                                  \
        explicit name(unsigned v) : name(static_cast<float>(v)) {}                                             \
        explicit name(long v) : name(static_cast<float>(v)) {}                                                 \
        explicit name(unsigned long v) : name(static_cast<float>(v)) {}                                        \
        explicit name(long long v) : name(static_cast<float>(v)) {}                                            \
        explicit name(unsigned long long v) : name(static_cast<float>(v)) {}                                   \
        explicit name(short v) : name(static_cast<float>(v)) {}                                                \
        explicit name(unsigned short v) : name(static_cast<float>(v)) {}                                       \
        explicit operator __half() const { return __half(__nv_cvt_fp8_to_halfraw(__x, kind)); }                 \
        explicit operator float() const { return emu::fp8_half_bits_to_float(__nv_cvt_fp8_to_halfraw(__x, kind).x); } \
        explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }             \
        explicit operator __nv_bfloat16() const { return __nv_bfloat16(static_cast<float>(*this)); }            \
    };

#define EMU_FP8_PAIR(name, kind)                                                                                \
    struct __attribute__((aligned(2))) name {                                                                   \
        __nv_fp8x2_storage_t __x;                                                                               \
        name() = default;                                                                                       \
        explicit name(__half2 f)                                                                                \
            : __x(__nv_cvt_halfraw2_to_fp8x2(__half2_raw{f.x.__x, f.y.__x}, __NV_SATFINITE, kind)) {}           \
        explicit name(__nv_bfloat162 f)                                                                         \
            : __x(__nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw{f.x.__x, f.y.__x}, __NV_SATFINITE, kind)) {} \
        explicit name(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, kind)) {}                     \
        explicit name(double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, kind)) {}                   \
        explicit operator __half2() const {                                                                     \
            const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__x, kind);                                        \
            return __half2{__half(__half_raw{r.x}), __half(__half_raw{r.y})};                                   \
        }                                                                                                       \
        explicit operator float2() const {                                                                      \
            const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__x, kind);                                        \
            return float2{emu::fp8_half_bits_to_float(r.x), emu::fp8_half_bits_to_float(r.y)};                          \
        }                                                                                                       \
    };

#define EMU_FP8_QUAD(name, kind)                                                                                \
    struct __attribute__((aligned(4))) name {                                                                   \
        __nv_fp8x4_storage_t __x;                                                                               \
        name() = default;                                                                                       \
        explicit name(__half2 lo, __half2 hi)                                                                   \
            : __x(__nv_cvt_halfraw2_to_fp8x2(__half2_raw{lo.x.__x, lo.y.__x}, __NV_SATFINITE, kind) |           \
                  (static_cast<__nv_fp8x4_storage_t>(                                                           \
                       __nv_cvt_halfraw2_to_fp8x2(__half2_raw{hi.x.__x, hi.y.__x}, __NV_SATFINITE, kind))       \
                   << 16)) {}                                                                                   \
        explicit name(__nv_bfloat162 lo, __nv_bfloat162 hi)                                                     \
            : __x(__nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw{lo.x.__x, lo.y.__x}, __NV_SATFINITE, kind) | \
                  (static_cast<__nv_fp8x4_storage_t>(__nv_cvt_bfloat16raw2_to_fp8x2(                            \
                       __nv_bfloat162_raw{hi.x.__x, hi.y.__x}, __NV_SATFINITE, kind))                           \
                   << 16)) {}                                                                                   \
        explicit name(float4 f)                                                                                 \
            : __x(__nv_cvt_float2_to_fp8x2(float2{f.x, f.y}, __NV_SATFINITE, kind) |                            \
                  (static_cast<__nv_fp8x4_storage_t>(__nv_cvt_float2_to_fp8x2(float2{f.z, f.w}, __NV_SATFINITE, kind)) \
                   << 16)) {}                                                                                   \
        explicit operator float4() const {                                                                      \
            const __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(__x), kind);    \
            const __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(__x >> 16), kind); \
            return float4{emu::fp8_half_bits_to_float(lo.x), emu::fp8_half_bits_to_float(lo.y),                         \
                          emu::fp8_half_bits_to_float(hi.x), emu::fp8_half_bits_to_float(hi.y)};                        \
        }                                                                                                       \
    };

EMU_FP8_SCALAR(__nv_fp8_e4m3, __NV_E4M3)
EMU_FP8_SCALAR(__nv_fp8_e5m2, __NV_E5M2)
EMU_FP8_PAIR(__nv_fp8x2_e4m3, __NV_E4M3)
EMU_FP8_PAIR(__nv_fp8x2_e5m2, __NV_E5M2)
EMU_FP8_QUAD(__nv_fp8x4_e4m3, __NV_E4M3)
EMU_FP8_QUAD(__nv_fp8x4_e5m2, __NV_E5M2)
#undef EMU_FP8_SCALAR
#undef EMU_FP8_PAIR
#undef EMU_FP8_QUAD
