/// @file test_unwritten_shared.cu
/// @brief Reads of shared memory no thread wrote: named with the array, the line and the thread,
///        once per launch; and never reported where every read slot was written first.
#include <cub/cub.cuh>

#include <cmath>
#include <regex>
#include <string>

#include "emu/control.h"
#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// The report waiting after the launches so far; the next test starts with none.
std::string take() { return emu::take_unwritten_shared_read(); }

// ---- reads that are reported ---------------------------------------------------------------

/// Lesson 3's pitfall: each warp parks its total in partials[warp], then warp 0 reads 32 slots
/// where only 2 were written.
constexpr int kUnguardedReadLine = __LINE__ + 7;
__global__ void unguarded_partials_kernel(float* out) {
    __shared__ float partials[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partials[warp] = 1.0f;
    __syncthreads();
    if (warp == 0) {
        float total = partials[lane];  // slots 2..31 were never written
        for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
        out[lane] = total;
    }
}

TEST_F(Emulator, AReadOfANeverWrittenSlotIsNamedWithItsLineAndThread) {
    take();
    Buffer<float> out(32);
    unguarded_partials_kernel<<<1, 64>>>(out.d);
    // The kernel runs on: the value read is the poison, and the outputs show it.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(std::isnan(out.get()[0]));
    // The first lane of warp 0 to read a slot past the two written ones is named (lane l reads
    // partials[l]), with the rest of the sentence.
    const std::string note = take();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(note, m, std::regex("^read of shared memory never written: partials\\[([0-9]+)\\] at "
                                                      "test_unwritten_shared.cu:" + std::to_string(kUnguardedReadLine) +
                                                      " by block \\(0,0,0\\) warp 0 lane ([0-9]+) \\(thread \\(([0-9]+),0,0\\)\\): "
                                                      "no thread of the block wrote it before this read")))
        << note;
    EXPECT_GE(std::stoi(m[1]), 2) << note;
    EXPECT_EQ(m[1], m[2]) << note;
    EXPECT_EQ(m[1], m[3]) << note;
    EXPECT_EQ(take(), "");  // taken once
}

/// A dynamic array written in its first half only; every thread reads one element of the second.
constexpr int kDynamicReadLine = __LINE__ + 5;
__global__ void dynamic_half_written_kernel(float* out) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = dyn[threadIdx.x + blockDim.x];
}

TEST_F(Emulator, AReadOfNeverWrittenDynamicSharedMemoryIsNamed) {
    take();
    Buffer<float> out(32);
    dynamic_half_written_kernel<<<1, 32, 64 * sizeof(float)>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::string note = take();
    EXPECT_TRUE(std::regex_search(note, std::regex("^read of shared memory never written: dyn\\[(3[2-9]|[4-5][0-9]|6[0-3])\\] "
                                                   "at test_unwritten_shared.cu:" + std::to_string(kDynamicReadLine))))
        << note;
}

/// Thread 0 writes word 0 when `write` is set; every thread then reads it.
__global__ void maybe_written_kernel(float* out, bool write) {
    __shared__ float word[1];
    if (write && threadIdx.x == 0) word[0] = 3.0f;
    __syncthreads();
    out[threadIdx.x] = word[0];
}

TEST_F(Emulator, WhatAnEarlierLaunchWroteIsNotWrittenForTheNext) {
    // The same shared memory on the same core: a slot the first launch wrote is poisoned again
    // for the second, which reads it without writing it.
    Buffer<float> out(32);
    maybe_written_kernel<<<1, 32>>>(out.d, true);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    take();
    maybe_written_kernel<<<1, 32>>>(out.d, false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_NE(take().find("read of shared memory never written: word[0]"), std::string::npos);
}

// ---- reads that are not ----------------------------------------------------------------------

/// Every slot read was written first: by a plain store, an atomic, halves of one word written by
/// two threads, a whole struct, the dynamic arena, and CUB's block and warp reductions.
__global__ void all_written_kernel(float* out) {
    using Reduce = cub::BlockReduce<float, 64>;
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename Reduce::TempStorage temp;
    __shared__ typename WarpReduce::TempStorage warp_temp[2];
    __shared__ int flag;
    __shared__ __half halves[64];
    __shared__ float4 quad;
    extern __shared__ float dyn[];
    const int t = threadIdx.x;
    if (t == 0) atomicExch(&flag, 7);
    halves[t] = __float2half(static_cast<float>(t));
    if (t == 1) quad = make_float4(1, 2, 3, 4);
    dyn[t] = static_cast<float>(t);
    __syncthreads();
    const float block_total = Reduce(temp).Sum(static_cast<float>(t));
    const float warp_total = WarpReduce(warp_temp[t / 32]).Sum(1.0f);
    const float4 q = quad;
    out[t] = block_total + warp_total + static_cast<float>(flag) + __half2float(halves[63 - t]) + q.w + dyn[63 - t];
}

TEST_F(Emulator, ReadsOfWrittenSlotsAreNotReported) {
    take();
    Buffer<float> out(64);
    for (int launch = 0; launch < 2; ++launch) {
        all_written_kernel<<<2, 64, 64 * sizeof(float)>>>(out.d);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(take(), "") << "launch " << launch;
    }
    EXPECT_EQ(out.get()[0], 2016.0f + 32.0f + 7.0f + 63.0f + 4.0f + 63.0f);  // thread 0 holds the block total
}

}  // namespace
