/// @file cuda_bf16.h
/// @brief The emulator's __nv_bfloat16 and __nv_bfloat162, rounding like the GPU.
#pragma once

#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(__nv_bfloat16_raw r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(emu::float_to_bf16_bits(f)) {}
    __nv_bfloat16(double f) : __x(emu::float_to_bf16_bits(static_cast<float>(f))) {}
    __nv_bfloat16(int v) : __nv_bfloat16(static_cast<float>(v)) {}
    operator float() const { return emu::bf16_bits_to_float(__x); }
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    __nv_bfloat16& operator+=(__nv_bfloat16 o) { return *this = __nv_bfloat16(float(*this) + float(o)); }
    __nv_bfloat16& operator*=(__nv_bfloat16 o) { return *this = __nv_bfloat16(float(*this) * float(o)); }
};
using nv_bfloat16 = __nv_bfloat16;

struct __attribute__((aligned(4))) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
using nv_bfloat162 = __nv_bfloat162;

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16(__nv_bfloat16_raw{b}); }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16(float(a) + float(b)); }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16(float(a) * float(b)); }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __nv_bfloat16(static_cast<float>(double(float(a)) * double(float(b)) + double(float(c))));
}
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }

inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __nv_bfloat162{__nv_bfloat16(f.x), __nv_bfloat16(f.y)}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162{a, b}; }
inline float __low2float(__nv_bfloat162 h) { return float(h.x); }
inline float __high2float(__nv_bfloat162 h) { return float(h.y); }
