/// @file fp8_bits.h
/// @brief fp64/fp32 <-> fp8 (e4m3, e5m2) bit by bit, with the GPU's rounding, saturation and NaNs.
///
/// What the GPU does (cuda_fp8.h): a narrowing conversion rounds to nearest, ties to even. A
/// magnitude past the largest finite value plus half a step becomes that largest value with
/// __NV_SATFINITE (infinity included: `cvt.rn.satfinite`); with __NV_NOSAT it becomes NaN in
/// e4m3 (which has no infinity) and infinity in e5m2. A NaN input gives the format's NaN, 0x7f;
/// a float NaN loses its sign (the float conversions make every NaN the canonical positive one)
/// while a double NaN keeps it. Widening to fp16 or fp32 is exact; an fp8 NaN becomes the
/// canonical positive NaN (fp16 0x7fff). grader/emulator/tests/test_fp8.cpp checks every one of
/// these against the toolkit's own conversion code.
#pragma once

#include <cstdint>
#include <cstring>

namespace emu {

/// The two fp8 formats' parameters.
struct Fp8Format {
    int mantissa_bits;       ///< 3 for e4m3, 2 for e5m2
    int bias;                ///< 7, 15
    uint8_t max_finite;      ///< 0x7e (448), 0x7b (57344)
    uint8_t overflow;        ///< the no-saturation result past the range: 0x7f (NaN), 0x7c (infinity)
    uint64_t first_overflow; ///< fp64 bits of the smallest magnitude that rounds past max_finite
};

/// e4m3: 448 + 16 (half a step) still rounds to 448 (a tie, and 448's mantissa is even); more does not.
inline constexpr Fp8Format kE4m3Format{3, 7, 0x7e, 0x7f, 0x407D000000000001ull};
/// e5m2: 57344 + 4096 (half a step) is a tie that rounds to the even neighbour, 65536: infinity.
inline constexpr Fp8Format kE5m2Format{2, 15, 0x7b, 0x7c, 0x40EE000000000000ull};

/// `v` rounded to the fp8 format `f`, to nearest even, saturating when `saturate`.
inline uint8_t double_to_fp8_bits(double v, bool saturate, const Fp8Format& f) {
    uint64_t x;
    std::memcpy(&x, &v, 8);
    const uint8_t sign = static_cast<uint8_t>((x >> 63) << 7);
    const uint64_t abs = x & 0x7fffffffffffffffull;
    if (abs > 0x7ff0000000000000ull) {
        // NaN: e4m3 has one NaN pattern; e5m2 keeps two bits of the payload (the first below the
        // quiet bit, and the next), made quiet.
        const uint8_t nan = f.mantissa_bits == 3 ? 0x7f : static_cast<uint8_t>(0x7e | ((x >> 50) & 0x3));
        return static_cast<uint8_t>(sign | nan);
    }
    if (abs >= f.first_overflow) return static_cast<uint8_t>(sign | (saturate ? f.max_finite : f.overflow));
    const int e = static_cast<int>(abs >> 52) - 1023;  // fp64 subnormals are far below any fp8 value
    const int min_normal_exp = 1 - f.bias;
    const int kept_exp = e > min_normal_exp ? e : min_normal_exp;
    // The significand with its leading one, in units of 2^(e - 52); fp8 keeps units of
    // 2^(kept_exp - mantissa_bits), so `shift` bits go.
    const uint64_t significand = (abs & 0xfffffffffffffull) | (uint64_t(1) << 52);
    const int shift = 52 - f.mantissa_bits + (kept_exp - e);
    if (shift > 53) return sign;  // below half the smallest subnormal (zero included): zero
    uint64_t n = significand >> shift;
    const uint64_t rest = significand & ((uint64_t(1) << shift) - 1);
    const uint64_t half = uint64_t(1) << (shift - 1);
    if (rest > half || (rest == half && (n & 1))) ++n;
    // n counts steps of the kept exponent, its leading one included: adding it to the field of
    // the exponent below puts the leading one into the exponent field, and a carry from rounding
    // up moves to the next binade by itself. Subnormals (kept_exp = 1 - bias) need no leading one.
    const uint64_t field = static_cast<uint64_t>(kept_exp + f.bias - 1) << f.mantissa_bits;
    return static_cast<uint8_t>(sign | (field + n));
}

/// `v` rounded to the fp8 format `f`: a float NaN is first made the canonical positive NaN.
inline uint8_t float_to_fp8_bits(float v, bool saturate, const Fp8Format& f) {
    uint32_t x;
    std::memcpy(&x, &v, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7f;  // both formats' NaN from a positive quiet NaN
    return double_to_fp8_bits(static_cast<double>(v), saturate, f);
}

/// The fp16 bits of an fp8 value (exact); a NaN is fp16's canonical 0x7fff.
inline uint16_t fp8_to_half_bits(uint8_t b, const Fp8Format& f) {
    const uint16_t sign = static_cast<uint16_t>((b & 0x80u) << 8);
    const int exp_bits = 7 - f.mantissa_bits;
    const int e = (b >> f.mantissa_bits) & ((1 << exp_bits) - 1);
    int m = b & ((1 << f.mantissa_bits) - 1);
    if (f.mantissa_bits == 3 ? (b & 0x7f) == 0x7f : (e == 0x1f && m != 0)) return 0x7fff;
    if (f.mantissa_bits == 2) return static_cast<uint16_t>(b << 8);  // e5m2 is the top byte of an fp16
    if (e == 0 && m == 0) return sign;
    int exp = e - f.bias;
    if (e == 0) {  // subnormal: normalise, one binade down per shift
        exp = 1 - f.bias;
        while (!(m & (1 << f.mantissa_bits))) {
            m <<= 1;
            --exp;
        }
        m &= (1 << f.mantissa_bits) - 1;
    }
    return static_cast<uint16_t>(sign | ((exp + 15) << 10) | (m << (10 - f.mantissa_bits)));
}

/// The fp32 value of fp16 bits as the fp8 types widen them: exact, a NaN the canonical 0x7fffffff.
inline float fp8_half_bits_to_float(uint16_t h) {
    if ((h & 0x7fffu) > 0x7c00u) {
        const uint32_t nan = 0x7fffffffu;
        float f;
        std::memcpy(&f, &nan, 4);
        return f;
    }
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0x1fu) {
        bits = sign | 0x7f800000u;
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        bits = sign;
    } else {
        uint32_t exp = 113;  // 2^-14 with the leading one at bit 10 after the shifts below
        while (!(m & 0x400u)) {
            m <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace emu
