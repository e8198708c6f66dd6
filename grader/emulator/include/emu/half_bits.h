/// @file half_bits.h
/// @brief fp32 <-> fp16/bf16 conversions bit by bit, rounding to nearest even like the GPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace emu {

inline uint32_t float_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
inline float bits_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

/// fp32 -> fp16, round to nearest even; overflow gives infinity, NaN stays NaN.
inline uint16_t float_to_half_bits(float f) {
    const uint32_t x = float_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65536 or more: infinity
    const int exp = static_cast<int>(abs >> 23) - 127;
    if (exp >= -14) {  // normal half
        uint32_t mant = abs & 0x7fffffu;
        uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
        const uint32_t rest = mant & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
        return static_cast<uint16_t>(sign | h);
    }
    if (exp < -25) return sign;  // below half the smallest subnormal: zero
    // Subnormal half: the value in units of 2^-24, rounded to nearest even.
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = -exp - 14 + 13;  // 14..24 bits dropped
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half_way = 1u << (shift - 1);
    if (rest > half_way || (rest == half_way && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

/// fp16 -> fp32, exact.
inline float half_bits_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return bits_float(sign);
    int e = -1;
    do {
        ++e;
        mant <<= 1;
    } while (!(mant & 0x400u));
    return bits_float(sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mant & 0x3ffu) << 13));
}

/// fp32 -> bf16, round to nearest even; NaN stays a quiet NaN.
inline uint16_t float_to_bf16_bits(float f) {
    const uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace emu
