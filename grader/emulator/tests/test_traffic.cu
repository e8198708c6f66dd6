/// @file test_traffic.cu
/// @brief The traffic recorder against hand-counted figures: sectors per request of coalesced,
///        vector and strided accesses, shared-memory bank conflicts, and the DRAM model's L2.
#include <vector>

#include "emu/control.h"
#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// Records the launches of `launch` inside a sampled call.
template <typename F>
std::vector<emu::TrafficLaunch> record(F&& launch) {
    emu::begin_sampled_call(9);
    emu::begin_traffic();
    launch();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto out = emu::end_traffic();
    emu::end_sampled_call();
    return out;
}

double sectors_per_request(const emu::TrafficLaunch& t) { return t.global_sectors / t.global_requests; }

__global__ void copy_floats(const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}
__global__ void copy_float4s(const float4* x, float4* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}
__global__ void strided_floats(const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i * 32];
}

TEST_F(Emulator, SectorsPerRequestAndBytesPerInstruction) {
    constexpr int kThreads = 256, kBlocks = 64;
    Buffer<float> x(kThreads * kBlocks * 32), y(kThreads * kBlocks * 4);
    const auto scalar = record([&] { copy_floats<<<kBlocks, kThreads>>>(x.d, y.d); });
    const auto vector = record([&] {
        copy_float4s<<<kBlocks, kThreads>>>(reinterpret_cast<const float4*>(x.d), reinterpret_cast<float4*>(y.d));
    });
    const auto strided = record([&] { strided_floats<<<kBlocks, kThreads>>>(x.d, y.d); });
    ASSERT_EQ(scalar.size(), 1u);
    ASSERT_EQ(vector.size(), 1u);
    ASSERT_EQ(strided.size(), 1u);
    // 32 lanes x 4 bytes = 128 bytes = 4 sectors; x 16 bytes = 16 sectors; a lane per sector: 32.
    EXPECT_DOUBLE_EQ(sectors_per_request(scalar[0]), 4.0);
    EXPECT_DOUBLE_EQ(sectors_per_request(vector[0]), 16.0);
    EXPECT_DOUBLE_EQ(sectors_per_request(strided[0]), (32.0 + 4.0) / 2.0);  // the load 32, the store 4
    EXPECT_DOUBLE_EQ(scalar[0].global_lane_bytes / scalar[0].global_lane_accesses, 4.0);
    EXPECT_DOUBLE_EQ(vector[0].global_lane_bytes / vector[0].global_lane_accesses, 16.0);
    EXPECT_LT(scalar[0].units_run, scalar[0].units) << "a sampled call records a sample of the blocks";
    // Every byte once, scaled to the grid: 64 KiB read and written.
    EXPECT_NEAR(scalar[0].dram_read_bytes, kThreads * kBlocks * 4.0, 1.0);
    EXPECT_NEAR(scalar[0].dram_write_bytes, kThreads * kBlocks * 4.0, 1.0);
    // The strided load touches a whole sector for 4 bytes of it.
    EXPECT_NEAR(strided[0].dram_read_bytes, kThreads * kBlocks * 32.0, 1.0);
}

__global__ void shared_columns(float* out, int stride) {
    __shared__ float s[32 * 33];
    s[threadIdx.x * stride] = static_cast<float>(threadIdx.x);
    __syncwarp();
    out[threadIdx.x] = s[threadIdx.x * stride];
}

TEST_F(Emulator, SharedMemoryBankConflictsAreCounted) {
    Buffer<float> out(32);
    const auto rows = record([&] { shared_columns<<<1, 32>>>(out.d, 1); });
    const auto column = record([&] { shared_columns<<<1, 32>>>(out.d, 32); });
    const auto padded = record([&] { shared_columns<<<1, 32>>>(out.d, 33); });
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_DOUBLE_EQ(rows[0].shared_requests, 2.0);
    EXPECT_DOUBLE_EQ(rows[0].shared_wavefronts, 0.0) << "consecutive words: one wavefront each";
    EXPECT_DOUBLE_EQ(column[0].shared_wavefronts / column[0].shared_requests, 31.0) << "every lane in bank 0";
    EXPECT_DOUBLE_EQ(padded[0].shared_wavefronts, 0.0) << "a row of 33 words: the column spreads over the banks";
}

/// Each block reads its chunk of x twice and writes one value.
__global__ void read_chunk_twice(const float4* x, int chunk, float* out) {
    const float4* mine = x + static_cast<int64_t>(blockIdx.x) * chunk;
    float s = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int i = threadIdx.x; i < chunk; i += blockDim.x) s += mine[i].x;
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

TEST_F(Emulator, ASecondReadComesFromDramOnlyWhenTheL2CannotHoldIt) {
    // 1000 blocks of 256 threads: 8 a SM, 1056 on the GPU at once. Re-reading a 16 KiB chunk, the
    // grid touched 17 MB in between (an L2 hit); a 64 KiB chunk, 68 MB (read from DRAM again).
    constexpr int kBlocks = 1000;
    Buffer<float> out(kBlocks);
    for (int chunk_bytes : {16 << 10, 64 << 10}) {
        const int chunk = chunk_bytes / 16;
        Buffer<float4> x(static_cast<size_t>(kBlocks) * chunk);
        const auto t = record([&] { read_chunk_twice<<<kBlocks, 256>>>(x.d, chunk, out.d); });
        ASSERT_EQ(t.size(), 1u);
        const double once = double(kBlocks) * chunk_bytes;
        if (chunk_bytes == (16 << 10)) EXPECT_NEAR(t[0].dram_read_bytes / once, 1.0, 0.01);
        else EXPECT_NEAR(t[0].dram_read_bytes / once, 2.0, 0.01);
    }
}

}  // namespace
