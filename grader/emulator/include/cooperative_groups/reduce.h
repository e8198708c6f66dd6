/// @file cooperative_groups/reduce.h
/// @brief cooperative_groups::reduce over a warp tile, and the operators it takes.
#pragma once

#include "../cooperative_groups.h"

namespace cooperative_groups {

template <typename T>
struct plus {
    EMU_INLINE T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T>
struct less {
    EMU_INLINE T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <typename T>
struct greater {
    EMU_INLINE T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <typename T>
struct bit_and {
    EMU_INLINE T operator()(const T& a, const T& b) const { return a & b; }
};
template <typename T>
struct bit_or {
    EMU_INLINE T operator()(const T& a, const T& b) const { return a | b; }
};
template <typename T>
struct bit_xor {
    EMU_INLINE T operator()(const T& a, const T& b) const { return a ^ b; }
};

/// The reduction of `value` over the tile, returned to every thread of it (a butterfly of
/// shuffles: for a commutative operation every lane combines the same values).
template <unsigned N, typename Parent, typename T, typename Op>
EMU_INLINE T reduce(const thread_block_tile<N, Parent>& tile, T value, Op op) {
    for (unsigned offset = N / 2; offset > 0; offset /= 2) value = op(value, tile.shfl_xor(value, static_cast<int>(offset)));
    return value;
}

}  // namespace cooperative_groups
