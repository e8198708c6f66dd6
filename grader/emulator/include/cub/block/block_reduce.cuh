/// @file cub/block/block_reduce.cuh
/// @brief The emulator's cub::BlockReduce: warp reductions, each warp's total to shared memory,
///        a barrier, then thread 0 combines them; the total is defined in thread 0 only.
///
/// Every algorithm is computed this way (CUB's default, BLOCK_REDUCE_WARP_REDUCTIONS); the
/// raking ones add in another order, which moves a floating-point total by rounding only.
/// As in CUB, the temporary storage needs a __syncthreads() before it is used again (the
/// emulator's race detector reports a missing one).
#pragma once

#include "../warp/warp_reduce.cuh"

namespace cub {

enum BlockReduceAlgorithm {
    BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
    BLOCK_REDUCE_RAKING,
    BLOCK_REDUCE_WARP_REDUCTIONS,
};

template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockReduce {
    static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr int kWarps = (kThreads + 31) / 32;

public:
    /// Shared memory for the warps' totals; declare it __shared__ (or in a union with others).
    struct TempStorage {
        T warp_totals[kWarps];
    };

    EMU_INLINE explicit BlockReduce(TempStorage& storage) : temp_(storage) {}
    /// Without storage: the block's own private shared copy, as CUB keeps one.
    EMU_INLINE BlockReduce()
        : temp_(*static_cast<TempStorage*>(
              ::emu::shared_slot(&::emu::SharedKey<BlockReduce>::key, sizeof(TempStorage), alignof(TempStorage)))) {}

    EMU_INLINE T Sum(T input) { return Reduce(input, ::cuda::std::plus<>{}, kThreads); }
    EMU_INLINE T Sum(T input, int num_valid) { return Reduce(input, ::cuda::std::plus<>{}, num_valid); }
    template <int ITEMS>
    EMU_INLINE T Sum(T (&inputs)[ITEMS]) {
        return Reduce(inputs, ::cuda::std::plus<>{});
    }
    template <typename ReductionOp>
    EMU_INLINE T Reduce(T input, ReductionOp op) {
        return Reduce(input, op, kThreads);
    }
    template <int ITEMS, typename ReductionOp>
    EMU_INLINE T Reduce(T (&inputs)[ITEMS], ReductionOp op) {
        T partial = inputs[0];
        for (int i = 1; i < ITEMS; ++i) partial = op(partial, inputs[i]);
        return Reduce(partial, op, kThreads);
    }
    /// The reduction over the first `num_valid` threads (in thread order), in thread 0.
    template <typename ReductionOp>
    EMU_INLINE T Reduce(T input, ReductionOp op, int num_valid) {
        const int rank = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
        const int warp = rank / 32, lane = rank % 32;
        const int in_warp = num_valid - warp * 32;
        T total = detail::reduce_logical_warp(input, op, 32, in_warp < 0 ? 0 : in_warp);
        if (lane == 0 && warp > 0 && in_warp > 0) temp_.warp_totals[warp] = total;
        __syncthreads();
        if (rank == 0) {
            const int warps = (num_valid + 31) / 32;
            for (int w = 1; w < warps && w < kWarps; ++w) total = op(total, temp_.warp_totals[w]);
        }
        return total;
    }

private:
    TempStorage& temp_;
};

}  // namespace cub
