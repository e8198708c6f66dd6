/// @file cuda_fp16.h
/// @brief The emulator's __half and __half2: fp16 storage, arithmetic through fp32, GPU rounding.
#pragma once

#include "emu/half_bits.h"
#include "emu/qualifiers.h"
#include "emu/vector_types.h"

struct __half_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};

struct __half {
    unsigned short __x;
    __half() = default;
    __half(__half_raw r) : __x(r.x) {}
    __half(float f) : __x(emu::float_to_half_bits(f)) {}
    __half(double f) : __x(emu::float_to_half_bits(static_cast<float>(f))) {}
    __half(int v) : __half(static_cast<float>(v)) {}
    operator float() const { return emu::half_bits_to_float(__x); }
    operator __half_raw() const { return __half_raw{__x}; }
    __half& operator+=(__half o) { return *this = __half(float(*this) + float(o)); }
    __half& operator*=(__half o) { return *this = __half(float(*this) * float(o)); }
};
using half = __half;

struct __attribute__((aligned(4))) __half2 {
    __half x, y;
};
using half2 = __half2;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __ushort_as_half(unsigned short b) { return __half(__half_raw{b}); }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline __half __int2half_rn(int v) { return __half(static_cast<float>(v)); }
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
/// Fused: the exact a*b+c rounded once (double holds the product of two halves exactly).
inline __half __hfma(__half a, __half b, __half c) {
    return __half(static_cast<float>(double(float(a)) * double(float(b)) + double(float(c))));
}
inline __half __hneg(__half a) { return __ushort_as_half(static_cast<unsigned short>(a.__x ^ 0x8000u)); }
inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
inline __half operator+(__half a, __half b) { return __hadd(a, b); }
inline __half operator-(__half a, __half b) { return __hsub(a, b); }
inline __half operator*(__half a, __half b) { return __hmul(a, b); }
inline __half operator/(__half a, __half b) { return __hdiv(a, b); }

inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
inline __half2 __float2half2_rn(float f) { return __half2{__half(f), __half(f)}; }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
