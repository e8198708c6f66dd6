/// @file test_libraries.cu
/// @brief The library headers the emulator provides, against hand-computed results:
///        cub::WarpReduce, cub::BlockReduce and cooperative-groups warp tiles.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cub/cub.cuh>

#include <cmath>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

namespace cg = cooperative_groups;
using emu_test::Buffer;
using emu_test::Emulator;

// ---- cub::WarpReduce ---------------------------------------------------------------------

/// Lane l of each warp holds l + 1 (1..32); logical warps of 8 hold 1..8 each.
__global__ void warp_reduce_kernel(int* full, int* eighth, int* valid5, int* maxima) {
    using Full = cub::WarpReduce<int>;
    using Eighth = cub::WarpReduce<int, 8>;
    __shared__ typename Full::TempStorage full_temp[2];
    __shared__ typename Eighth::TempStorage eighth_temp[8];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = threadIdx.x;
    full[g] = Full(full_temp[warp]).Sum(lane + 1);
    eighth[g] = Eighth(eighth_temp[threadIdx.x / 8]).Sum(lane % 8 + 1);
    valid5[g] = Full(full_temp[warp]).Sum(lane + 1, 5);
    // A maximum that is not at lane 31: lane 9 holds 1000.
    maxima[g] = Full(full_temp[warp]).Reduce(lane == 9 ? 1000 : lane, cuda::maximum<>{});
}

TEST_F(Emulator, WarpReduceSumsIntoTheFirstLaneOfEachLogicalWarp) {
    Buffer<int> full(64), eighth(64), valid5(64), maxima(64);
    warp_reduce_kernel<<<1, 64>>>(full.d, eighth.d, valid5.d, maxima.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto f = full.get(), e = eighth.get(), v = valid5.get(), m = maxima.get();
    for (int w = 0; w < 2; ++w) {
        EXPECT_EQ(f[w * 32], 528) << w;  // 1 + 2 + ... + 32
        EXPECT_EQ(v[w * 32], 15) << w;   // 1 + ... + 5: only the first five lanes count
        EXPECT_EQ(m[w * 32], 1000) << w;
    }
    for (int l = 0; l < 64; l += 8) EXPECT_EQ(e[l], 36) << l;  // 1 + ... + 8
}

// ---- cub::BlockReduce --------------------------------------------------------------------

constexpr int kBlock = 96;  // three warps

__global__ void block_reduce_kernel(int* sum, int* sum50, float* fmax, int* implicit) {
    using Reduce = cub::BlockReduce<int, kBlock>;
    using ReduceF = cub::BlockReduce<float, kBlock>;
    __shared__ typename Reduce::TempStorage temp;
    __shared__ typename ReduceF::TempStorage ftemp;
    const int t = threadIdx.x;
    const int s = Reduce(temp).Sum(t);
    __syncthreads();  // temp is used again
    const int s50 = Reduce(temp).Sum(t, 50);
    const float m = ReduceF(ftemp).Reduce(t == 70 ? 123.5f : float(t) * 0.5f, cuda::maximum<>{});
    int items[3] = {t, 2 * t, 3 * t};
    const int over_items = Reduce().Sum(items);  // the block's private storage
    if (t == 0) {
        sum[0] = s;
        sum50[0] = s50;
        fmax[0] = m;
        implicit[0] = over_items;
    }
}

TEST_F(Emulator, BlockReduceGivesThreadZeroTheBlocksTotal) {
    Buffer<int> sum(1), sum50(1), implicit(1);
    Buffer<float> fmax(1);
    block_reduce_kernel<<<2, kBlock>>>(sum.d, sum50.d, fmax.d, implicit.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(sum.get()[0], 4560);      // 0 + 1 + ... + 95
    EXPECT_EQ(sum50.get()[0], 1225);    // 0 + ... + 49
    EXPECT_EQ(fmax.get()[0], 123.5f);
    EXPECT_EQ(implicit.get()[0], 6 * 4560);
}

constexpr int kReuseLine = __LINE__ + 5;
__global__ void block_reduce_reused_too_soon_kernel(int* out) {
    using Reduce = cub::BlockReduce<int, kBlock>;
    __shared__ typename Reduce::TempStorage temp;
    const int a = Reduce(temp).Sum(1);
    const int b = Reduce(temp).Sum(2);  // no __syncthreads(): thread 0 may still read the first totals
    if (threadIdx.x == 0) out[0] = a + b;
}

TEST_F(Emulator, BlockReduceStorageReusedWithoutABarrierIsARace) {
    Buffer<int> out(1);
    block_reduce_reused_too_soon_kernel<<<1, kBlock>>>(out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorSharedMemoryRace) << explain(e);
    // The race is inside CUB's code; the report names the kernel's line that called it.
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("test_libraries.cu:" + std::to_string(kReuseLine)),
              std::string::npos)
        << cudaGetErrorString(e);
}

/// Lesson 3's README kernel, as written there: cub::BlockReduce over each row.
template <int kThreads>
__global__ void rmsnorm_block_cub(const float* x, const float* weight, float* y, int64_t rows, int64_t cols,
                                  float eps) {
    using BlockReduce = cub::BlockReduce<float, kThreads>;
    __shared__ typename BlockReduce::TempStorage temp;
    __shared__ float inv_rms;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float sum = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += kThreads) sum += xr[c] * xr[c];
        sum = BlockReduce(temp).Sum(sum);
        if (threadIdx.x == 0) inv_rms = rsqrtf(sum / float(cols) + eps);
        __syncthreads();
        for (int64_t c = threadIdx.x; c < cols; c += kThreads) y[row * cols + c] = xr[c] * inv_rms * weight[c];
        __syncthreads();
    }
}

TEST_F(Emulator, TheLessonsBlockReduceKernelNormalisesRows) {
    const int rows = 3, cols = 300;
    std::vector<float> hx(rows * cols), hw(cols);
    for (int i = 0; i < rows * cols; ++i) hx[i] = static_cast<float>((i * 37) % 11) - 5.0f;
    for (int c = 0; c < cols; ++c) hw[c] = 0.5f + 0.01f * c;
    Buffer<float> x(rows * cols), w(cols), y(rows * cols);
    x.set(hx);
    w.set(hw);
    rmsnorm_block_cub<128><<<2, 128>>>(x.d, w.d, y.d, rows, cols, 1e-5f);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto hy = y.get();
    for (int r = 0; r < rows; ++r) {
        double ss = 0;
        for (int c = 0; c < cols; ++c) ss += double(hx[r * cols + c]) * hx[r * cols + c];
        const double inv = 1.0 / std::sqrt(ss / cols + 1e-5);
        for (int c = 0; c < cols; ++c)
            EXPECT_NEAR(hy[r * cols + c], hx[r * cols + c] * inv * hw[c], 1e-5) << r << "," << c;
    }
}

// ---- cooperative groups ------------------------------------------------------------------

__global__ void tile_kernel(int* sums, int* reduced, int* ranks, int* groups, unsigned* ballots, int* ones) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);
    const int g = threadIdx.x;
    int v = static_cast<int>(tile.thread_rank()) + 1;
    for (int o = 4; o > 0; o /= 2) v += tile.shfl_xor(v, o);
    sums[g] = v;
    reduced[g] = cg::reduce(tile, g, cg::plus<int>());
    ranks[g] = static_cast<int>(tile.thread_rank());
    groups[g] = static_cast<int>(tile.meta_group_rank());
    ballots[g] = tile.ballot(tile.thread_rank() % 2 == 1);
    tile.sync();
    block.sync();
    ones[g] = tile.shfl(g, 3);  // every lane of a tile reads its tile's rank 3
}

TEST_F(Emulator, WarpTilesShuffleReduceAndVoteWithinTheirEightLanes) {
    Buffer<int> sums(64), reduced(64), ranks(64), groups(64), ones(64);
    Buffer<unsigned> ballots(64);
    tile_kernel<<<1, 64>>>(sums.d, reduced.d, ranks.d, groups.d, ballots.d, ones.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto s = sums.get(), red = reduced.get(), r = ranks.get(), gr = groups.get(), o = ones.get();
    const auto b = ballots.get();
    for (int g = 0; g < 64; ++g) {
        const int first = g / 8 * 8;
        EXPECT_EQ(s[g], 36) << g;                                  // 1 + ... + 8 in every lane
        EXPECT_EQ(red[g], 8 * first + 28) << g;                    // first + (first+1) + ... + (first+7)
        EXPECT_EQ(r[g], g % 8) << g;
        EXPECT_EQ(gr[g], g / 8) << g;
        EXPECT_EQ(b[g], 0xaau) << g;                               // ranks 1, 3, 5, 7 of the tile
        EXPECT_EQ(o[g], first + 3) << g;
    }
}

}  // namespace
