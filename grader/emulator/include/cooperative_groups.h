/// @file cooperative_groups.h
/// @brief The emulator's cooperative groups: the thread block, warp tiles (tiled_partition<N>)
///        with their shuffles, votes and barrier, and the thread-block cluster of lesson 8 with
///        its barrier and distributed shared memory.
///
/// Every call is always inlined into the kernel, so the emulator's reports name the kernel's
/// line. Not provided: grid_group (grid.sync() needs a cooperative launch), coalesced groups
/// and tiles of more than 32 threads.
#pragma once

#include "cuda_runtime.h"

namespace cooperative_groups {

namespace details {
/// The calling thread's index in its block, x fastest (the order warps are formed in).
EMU_INLINE unsigned block_thread_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
EMU_INLINE unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
}  // namespace details

/// The threads of one block.
class thread_block {
public:
    EMU_INLINE void sync() const { __syncthreads(); }
    EMU_INLINE unsigned long long thread_rank() const { return details::block_thread_rank(); }
    EMU_INLINE unsigned long long num_threads() const { return details::block_threads(); }
    EMU_INLINE unsigned long long size() const { return num_threads(); }
    EMU_INLINE dim3 group_index() const { return dim3(blockIdx); }
    EMU_INLINE dim3 thread_index() const { return dim3(threadIdx); }
    EMU_INLINE dim3 group_dim() const { return dim3(blockDim); }
    EMU_INLINE dim3 dim_threads() const { return dim3(blockDim); }
};

EMU_INLINE thread_block this_thread_block() { return thread_block(); }

/// N consecutive threads of a warp (N a power of two up to 32), as tiled_partition<N> makes them.
/// Its collectives are the warp operations over the tile's lanes, with width N.
template <unsigned N, typename Parent = void>
class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "the CPU emulator's tiles are powers of two up to 32 threads (one warp)");

public:
    thread_block_tile() = default;
    template <typename P>
    EMU_INLINE thread_block_tile(const thread_block_tile<N, P>&) {}

    /// The lanes of the calling thread's tile inside its warp.
    EMU_INLINE unsigned mask() const {
        if (N == 32) return 0xffffffffu;
        const unsigned first = (details::block_thread_rank() % 32) / N * N;
        return ((1u << N) - 1u) << first;
    }
    EMU_INLINE void sync() const { __syncwarp(mask()); }
    EMU_INLINE unsigned long long thread_rank() const { return details::block_thread_rank() % N; }
    EMU_INLINE unsigned long long num_threads() const { return N; }
    EMU_INLINE unsigned long long size() const { return N; }
    EMU_INLINE unsigned long long meta_group_rank() const { return details::block_thread_rank() / N; }
    EMU_INLINE unsigned long long meta_group_size() const { return (details::block_threads() + N - 1) / N; }

    template <typename T>
    EMU_INLINE T shfl(T var, int src_rank) const { return __shfl_sync(mask(), var, src_rank, N); }
    template <typename T>
    EMU_INLINE T shfl_xor(T var, int lane_mask) const { return __shfl_xor_sync(mask(), var, lane_mask, N); }
    template <typename T>
    EMU_INLINE T shfl_down(T var, unsigned delta) const { return __shfl_down_sync(mask(), var, delta, N); }
    template <typename T>
    EMU_INLINE T shfl_up(T var, unsigned delta) const { return __shfl_up_sync(mask(), var, delta, N); }
    EMU_INLINE int any(int predicate) const { return __any_sync(mask(), predicate); }
    EMU_INLINE int all(int predicate) const { return __all_sync(mask(), predicate); }
    /// Bit i is tile rank i's predicate.
    EMU_INLINE unsigned ballot(int predicate) const {
        const unsigned first = (details::block_thread_rank() % 32) / N * N;
        return N == 32 ? __ballot_sync(mask(), predicate) : (__ballot_sync(mask(), predicate) >> first) & ((1u << N) - 1u);
    }
};

template <unsigned N, typename Parent>
EMU_INLINE thread_block_tile<N, Parent> tiled_partition(const Parent&) {
    return thread_block_tile<N, Parent>();
}

/// The blocks of one thread-block cluster (launched with a cluster dimension or __cluster_dims__).
class cluster_group {
public:
    /// Arrive and wait: every thread of every block of the cluster.
    EMU_INLINE void sync() const { ::emu::cluster_sync(); }
    /// The split form: arrive (done with what peers may read), later wait for the others.
    EMU_INLINE void barrier_arrive() const { ::emu::cluster_arrive(); }
    EMU_INLINE void barrier_wait() const { ::emu::cluster_wait(); }
    EMU_INLINE unsigned block_rank() const { return ::emu::cluster_block_rank(); }
    EMU_INLINE unsigned num_blocks() const {
        const dim3 d = ::emu::cluster_dims();
        return d.x * d.y * d.z;
    }
    EMU_INLINE dim3 dim_blocks() const { return ::emu::cluster_dims(); }
    EMU_INLINE dim3 block_index() const {
        const dim3 d = ::emu::cluster_dims();
        const unsigned r = block_rank();
        return dim3(r % d.x, (r / d.x) % d.y, r / (d.x * d.y));
    }
    EMU_INLINE unsigned long long thread_rank() const {
        return static_cast<unsigned long long>(block_rank()) * details::block_threads() + details::block_thread_rank();
    }
    EMU_INLINE unsigned long long num_threads() const {
        return static_cast<unsigned long long>(num_blocks()) * details::block_threads();
    }
    EMU_INLINE unsigned long long size() const { return num_threads(); }
    EMU_INLINE dim3 dim_threads() const { return dim3(blockDim); }
    EMU_INLINE bool is_valid() const { return true; }
    /// The same shared-memory variable in block `rank` of the cluster (distributed shared memory).
    template <typename T>
    EMU_INLINE T* map_shared_rank(T* addr, unsigned rank) const {
        return static_cast<T*>(::emu::map_shared_rank(addr, rank));
    }
    template <typename T>
    EMU_INLINE T& map_shared_rank(T& addr, unsigned rank) const {
        return *static_cast<T*>(::emu::map_shared_rank(&addr, rank));
    }
    EMU_INLINE unsigned query_shared_rank(const void* addr) const { return ::emu::query_shared_rank(addr); }
};

EMU_INLINE cluster_group this_cluster() { return cluster_group(); }

/// `sync(g)` as a free function, for every group above.
template <typename Group>
EMU_INLINE void sync(const Group& g) {
    g.sync();
}

}  // namespace cooperative_groups
