/// @file cub/warp/warp_reduce.cuh
/// @brief The emulator's cub::WarpReduce: a shuffle reduction over a logical warp whose total,
///        as in CUB, is defined in the logical warp's first lane only.
#pragma once

#include <cstring>
#include <type_traits>

#include <cuda/functional>
#include <cuda/std/functional>

#include "cuda_runtime.h"

namespace cub {
namespace detail {

/// `value` of lane `src` of the calling lane's warp, for a value of any size (4-byte pieces,
/// each one warp shuffle, as CUB moves types wider than a register).
template <typename T>
EMU_INLINE T shuffle_from(unsigned mask, const T& value, int src) {
    static_assert(std::is_trivially_copyable_v<T>, "a reduced type is copied between lanes bytewise");
    if constexpr (sizeof(T) <= 8) {
        return __shfl_sync(mask, value, src);
    } else {
        constexpr int kWords = (sizeof(T) + 3) / 4;
        unsigned words[kWords] = {};
        std::memcpy(words, &value, sizeof(T));
        for (int i = 0; i < kWords; ++i) words[i] = __shfl_sync(mask, words[i], src);
        T out;
        std::memcpy(&out, words, sizeof(T));
        return out;
    }
}

/// Reduction of `input` over the `width` lanes of the calling lane's logical warp, combining
/// lane i with lane i + offset for offsets 1, 2, 4, ... (CUB's shuffle-down order). Only the
/// first `valid` lanes contribute; lanes a partial warp lacks are never read. The total ends
/// in the logical warp's first lane; other lanes hold partial results.
template <typename T, typename Op>
EMU_INLINE T reduce_logical_warp(T input, Op op, int width, int valid) {
    const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const int lane = static_cast<int>(rank % 32);
    const int first = lane / width * width;
    const int logical = lane - first;
    // The lanes of the logical warp that exist (a block's last warp may be partial).
    const int existing = static_cast<int>(threads - (rank - lane)) - first;
    const int members = existing < width ? existing : width;
    const unsigned mask = (members >= 32 ? 0xffffffffu : ((1u << members) - 1u)) << first;
    if (valid > members) valid = members;
    for (int offset = 1; offset < width; offset *= 2) {
        const int src = logical + offset;
        const T other = shuffle_from(mask, input, first + (src < members ? src : logical));
        if (src < valid) input = op(input, other);
    }
    return input;
}

}  // namespace detail

/// cub::WarpReduce<T, LOGICAL_WARP_THREADS>: LOGICAL_WARP_THREADS a power of two up to 32.
template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpReduce {
    static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                      (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                  "the CPU emulator's WarpReduce takes logical warps of a power of two up to 32 threads");

public:
    /// The shuffle reduction needs no shared memory; the type exists so the usual code compiles.
    struct TempStorage {};

    EMU_INLINE explicit WarpReduce(TempStorage&) {}

    /// The sum over the logical warp, in its first lane.
    EMU_INLINE T Sum(T input) { return Reduce(input, ::cuda::std::plus<>{}); }
    /// The sum of the first `valid_items` lanes, in the first lane.
    EMU_INLINE T Sum(T input, int valid_items) { return Reduce(input, ::cuda::std::plus<>{}, valid_items); }
    template <typename ReductionOp>
    EMU_INLINE T Reduce(T input, ReductionOp op) {
        return detail::reduce_logical_warp(input, op, LOGICAL_WARP_THREADS, LOGICAL_WARP_THREADS);
    }
    template <typename ReductionOp>
    EMU_INLINE T Reduce(T input, ReductionOp op, int valid_items) {
        return detail::reduce_logical_warp(input, op, LOGICAL_WARP_THREADS, valid_items);
    }
};

}  // namespace cub
