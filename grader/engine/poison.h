/// @file poison.h
/// @brief The bits every output element holds before a launch, so that "never written" means it.
///
/// The poison is a NaN, so an element nobody wrote can never pass, and a NaN with a payload of its
/// own, so that a NaN the kernel computed is never mistaken for it: a GPU's arithmetic returns the
/// canonical NaN (0x7fffffff, 0x7fff), a CPU's returns the quieted operand or 0xffc00000, and the
/// inputs' NaN is 0x7fc00000. Each poison is a signalling NaN, which every arithmetic operation
/// turns into a quiet one: only an element that was never written, or that was copied from one
/// that was not, still holds these exact bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "workbook/inputs.h"

namespace workbook {

/// The poison of an element of type T: its bits (`Bits`, as wide as T) and how to read them.
template <typename T>
struct Poison;
template <>
struct Poison<float> {
    using Bits = uint32_t;
    static constexpr Bits bits = 0x7fbadbadu;  ///< exponent all ones, quiet bit clear: "bad bad"
};
template <>
struct Poison<__half> {
    using Bits = uint16_t;
    static constexpr Bits bits = 0x7dadu;  ///< fp16: 5-bit exponent all ones, quiet bit (bit 9) clear
};
template <>
struct Poison<__nv_bfloat16> {
    using Bits = uint16_t;
    static constexpr Bits bits = 0x7fadu;  ///< bf16: 8-bit exponent all ones, quiet bit (bit 6) clear
};
/// e4m3 has two NaNs and no payload: 0xff, which a saturating conversion never writes (a NaN
/// becomes 0x7f), so only a kernel that stores a negative NaN's byte itself writes it.
template <>
struct Poison<E4m3> {
    using Bits = uint8_t;
    static constexpr Bits bits = 0xffu;
};

/// True when `v` still holds T's poison, bit for bit.
template <typename T>
WB_HD inline bool is_poison(const T& v) {
    typename Poison<T>::Bits b;
    std::memcpy(&b, &v, sizeof b);
    return b == Poison<T>::bits;
}

}  // namespace workbook
