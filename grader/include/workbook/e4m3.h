/**
 * @file e4m3.h
 * @brief The FP8 e4m3 format of lesson 11, in fp64: decoding, rounding with saturation, neighbours.
 *
 * e4m3 ("fn": finite, no infinity) has a sign bit, 4 exponent bits (bias 7) and 3 mantissa bits:
 * normals (1 + m/8) · 2^(e−7) for e = 1..15, subnormals m · 2^−9 for e = 0, and one NaN pattern per
 * sign (exponent and mantissa all ones, 0x7f and 0xff), so the largest finite value is
 * 1.75 · 2^8 = 448. Between two binades the spacing is 1/8 of the lower power of two: a relative
 * step of 2^−3 to 2^−4, against 2^−23 for fp32.
 *
 * The grader's oracle rounds with these functions, on the CPU and inside its own GPU kernels, so
 * it does not depend on cuda_fp8.h; a CPU test checks them against cuda_fp8.h's own conversion for
 * every bit pattern and every midpoint.
 */
#pragma once

#include <cmath>
#include <cstdint>

#include "workbook/hd.h"

namespace workbook {

/// The largest finite e4m3 value.
inline constexpr double kE4m3Max = 448.0;
/// The smallest positive e4m3 value (a subnormal): 2^-9.
inline constexpr double kE4m3MinSubnormal = 1.0 / 512.0;
/// The smallest positive normal e4m3 value: 2^-6.
inline constexpr double kE4m3MinNormal = 1.0 / 64.0;

/// True for the two NaN encodings.
WB_HD inline bool e4m3_is_nan(uint8_t bits) { return (bits & 0x7f) == 0x7f; }

/// The value of an e4m3 byte (NaN for 0x7f and 0xff).
WB_HD inline double e4m3_to_double(uint8_t bits) {
    if (e4m3_is_nan(bits)) return NAN;
    const int e = (bits >> 3) & 0xf;
    const int m = bits & 0x7;
    const double magnitude = e == 0 ? m * kE4m3MinSubnormal : ldexp(1.0 + m / 8.0, e - 7);
    return (bits & 0x80) ? -magnitude : magnitude;
}

/// The spacing of e4m3 numbers at magnitude `a` (a < 448): 2^-9 below 2^-6, else 2^(exponent − 3).
WB_HD inline double e4m3_quantum(double a) {
    if (a < kE4m3MinNormal) return kE4m3MinSubnormal;
    int k = 0;
    frexp(a, &k);  // a = f · 2^k with f in [0.5, 1): a's binade starts at 2^(k − 1)
    return ldexp(1.0, k - 1 - 3);
}

/// `v` rounded to e4m3, to nearest with ties to even, saturating: a finite |v| above 448
/// (infinity included) gives ±448, NaN gives NaN. This is `cvt.rn.satfinite.e4m3x2.f32`
/// (cuda_fp8.h's __NV_SATFINITE) applied to the exact value.
WB_HD inline double e4m3_round(double v) {
    if (v != v) return v;
    const double a = v < 0 ? -v : v;
    double r;
    if (a >= kE4m3Max) {
        r = kE4m3Max;
    } else {
        const double q = e4m3_quantum(a);
        r = rint(a / q) * q;  // a / q is exact (q is a power of two); rint rounds ties to even
        if (r > kE4m3Max) r = kE4m3Max;
    }
    return v < 0 ? -r : r;
}

/// The e4m3 byte of an e4m3 value `v` (one that e4m3_round returns; NaN gives 0x7f).
WB_HD inline uint8_t e4m3_bits_of(double v) {
    if (v != v) return 0x7f;
    const uint8_t sign = (v < 0 || (v == 0 && 1.0 / v < 0)) ? 0x80 : 0x00;  // -0 keeps its sign
    const double a = v < 0 ? -v : v;
    if (a < kE4m3MinNormal) return static_cast<uint8_t>(sign | static_cast<int>(a / kE4m3MinSubnormal));
    int k = 0;
    frexp(a, &k);
    const int e = k - 1 + 7;
    const int m = static_cast<int>((ldexp(a, -(k - 1)) - 1.0) * 8.0);
    return static_cast<uint8_t>(sign | (e << 3) | m);
}

/// How many e4m3 values lie between `a` and `b` (both e4m3 values of the same sign or zero),
/// plus one: 0 when equal, 1 for neighbours. Used to say how far a wrong q is from the right one.
WB_HD inline int e4m3_steps(double a, double b) {
    // The byte order of e4m3 magnitudes is their numeric order, so bytes count the steps.
    const int ia = e4m3_bits_of(a < 0 ? -a : a), ib = e4m3_bits_of(b < 0 ? -b : b);
    if ((a < 0) != (b < 0) && a != 0 && b != 0) return ia + ib;
    return ia > ib ? ia - ib : ib - ia;
}

/// An e4m3 element as the grader's tensors store it: one byte (Elem<E4m3> in inputs.h).
struct E4m3 {
    uint8_t bits;
};

}  // namespace workbook
