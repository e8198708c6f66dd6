/// @file test_kernels.cu
/// @brief The emulator's semantics, checked with kernels compiled the way submissions are:
///        shuffles against hand-computed results, barriers, races, launch errors, memory faults.
#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "emu/control.h"
#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

// ---- shuffles ----------------------------------------------------------------------------

__global__ void shuffle_kernel(int* xor1, int* up3w8, int* down5, int* bcast, unsigned* ballot, int* butterfly) {
    const int lane = threadIdx.x % 32;
    const int g = threadIdx.x;
    xor1[g] = __shfl_xor_sync(0xffffffffu, lane * 10, 1);
    up3w8[g] = __shfl_up_sync(0xffffffffu, lane, 3, 8);
    down5[g] = __shfl_down_sync(0xffffffffu, lane, 5);
    bcast[g] = __shfl_sync(0xffffffffu, lane + 100, 7);
    ballot[g] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    int v = lane;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    butterfly[g] = v;
}

TEST_F(Emulator, ShufflesMatchHandComputedResults) {
    Buffer<int> xor1(64), up(64), down(64), bcast(64), butterfly(64);
    Buffer<unsigned> ballot(64);
    shuffle_kernel<<<1, 64>>>(xor1.d, up.d, down.d, bcast.d, ballot.d, butterfly.d);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    unsigned every_third = 0;
    for (int l = 0; l < 32; l += 3) every_third |= 1u << l;
    const auto x = xor1.get(), u = up.get(), d = down.get(), b = bcast.get(), s = butterfly.get();
    const auto bal = ballot.get();
    for (int g = 0; g < 64; ++g) {
        const int lane = g % 32;
        EXPECT_EQ(x[g], (lane ^ 1) * 10) << g;
        // Width 8: lanes 0-2 of each 8-lane segment keep their own value.
        EXPECT_EQ(u[g], lane % 8 < 3 ? lane : lane - 3) << g;
        EXPECT_EQ(d[g], lane + 5 < 32 ? lane + 5 : lane) << g;
        EXPECT_EQ(b[g], 107) << g;
        EXPECT_EQ(bal[g], every_third) << g;
        EXPECT_EQ(s[g], 496) << g;  // 0 + 1 + ... + 31
    }
}

__global__ void half_warp_kernel(int* out) {
    // The two halves of the warp shuffle separately, each with its own mask.
    const int lane = threadIdx.x;
    const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    out[lane] = __shfl_sync(mask, lane, lane < 16 ? 3 : 20);
}

TEST_F(Emulator, ShufflesWithDisjointMasksProceedIndependently) {
    Buffer<int> out(32);
    half_warp_kernel<<<1, 32>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto o = out.get();
    for (int l = 0; l < 32; ++l) EXPECT_EQ(o[l], l < 16 ? 3 : 20) << l;
}

__global__ void mask_without_source_kernel(int* out) {
    out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 16);
}

TEST_F(Emulator, ShuffleFromALaneOutsideTheMaskIsReported) {
    Buffer<int> out(16);
    mask_without_source_kernel<<<1, 16>>>(out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    // Lane 0 ^ 16 = lane 16 is in the warp's 32-lane segment but not in the mask: undefined on the GPU.
    ASSERT_EQ(e, cudaErrorEmulatorWarpSync) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("reads lane 16, which is not in the mask 0x0000ffff"),
              std::string::npos);
}

// ---- barriers ----------------------------------------------------------------------------

__global__ void divergent_barrier_kernel(float* out) {
    if (threadIdx.x == 0) {
        __syncthreads();
    } else {
        out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
    }
}

TEST_F(Emulator, DivergentBarrierIsReportedNotHung) {
    Buffer<float> out(64);
    divergent_barrier_kernel<<<1, 64>>>(out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorDivergentBarrier) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("not every thread of the block reaches __syncthreads()"), std::string::npos) << text;
    EXPECT_NE(text.find("test_kernels.cu"), std::string::npos) << text;
}

__global__ void early_exit_kernel(int* out) {
    // Threads past the row's end return before the barrier; the rest still meet there.
    if (threadIdx.x >= 40) return;
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    atomicAdd(&total, 1);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = total;
}

TEST_F(Emulator, ExitedThreadsDoNotHoldUpABarrier) {
    Buffer<int> out(1);
    early_exit_kernel<<<1, 64>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(out.get()[0], 40);
}

// ---- shared memory -----------------------------------------------------------------------

__global__ void unwritten_shared_kernel(float* out) {
    __shared__ float slots[64];
    if (threadIdx.x == 0) slots[0] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = slots[threadIdx.x];
}

TEST_F(Emulator, SharedMemoryStartsAsNaN) {
    Buffer<float> out(64);
    unwritten_shared_kernel<<<2, 64>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto o = out.get();
    EXPECT_EQ(o[0], 1.0f);
    for (int i = 1; i < 64; ++i) EXPECT_TRUE(std::isnan(o[i])) << i;
}

constexpr int kRaceWriteLine = __LINE__ + 4;
constexpr int kRaceReadLine = __LINE__ + 7;
__global__ void race_kernel(float* out, bool with_barrier) {
    __shared__ float partials[32];
    if (threadIdx.x % 32 == 0) partials[threadIdx.x / 32] = 1.0f;
    if (with_barrier) __syncthreads();
    float total = 0.0f;
    if (threadIdx.x < 32) {
        total = threadIdx.x < 2 ? partials[threadIdx.x] : 0.0f;
    }
    out[threadIdx.x] = total;
}

TEST_F(Emulator, MissingBarrierIsARaceNamingBothLines) {
    Buffer<float> out(64);
    race_kernel<<<1, 64>>>(out.d, false);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorSharedMemoryRace) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("test_kernels.cu:" + std::to_string(kRaceWriteLine)), std::string::npos) << text;
    EXPECT_NE(text.find("test_kernels.cu:" + std::to_string(kRaceReadLine)), std::string::npos) << text;
    EXPECT_NE(text.find("no __syncthreads() between"), std::string::npos) << text;
}

TEST_F(Emulator, TheBarrierRemovesTheRace) {
    Buffer<float> out(64);
    // Every launch order is the same: the verdict does not depend on luck.
    for (int i = 0; i < 3; ++i) {
        race_kernel<<<4, 64>>>(out.d, true);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    EXPECT_EQ(out.get()[1], 1.0f);
}

/// One block per row, rows strided, two warps: the block sum without its second barrier, so
/// the next row's write of partials[0] (warp 0) can overtake warp 1's read of this row's.
constexpr int kSecondBarrierWriteLine = __LINE__ + 7;
constexpr int kSecondBarrierReadLine = __LINE__ + 8;
__global__ void missing_second_barrier_kernel(float* out, int rows) {
    __shared__ float partials[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int row = 0; row < rows; ++row) {
        float v = static_cast<float>(row + lane);
        if (lane == 0) partials[warp] = v;
        __syncthreads();
        float total = lane < 2 ? partials[lane] : 0.0f;
        for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
        out[row * 64 + threadIdx.x] = total;  // no __syncthreads() here
    }
}

TEST_F(Emulator, ARaceNamesTheOtherWarpAsTheReader) {
    // Both warps read partials[0] and partials[1]; the first warp on to the next row writes its
    // slot while the other warp's read of it is unordered with the write: the reader to name is
    // that other warp, not the writer, whose own read of the slot comes before its write.
    Buffer<float> out(2 * 64);
    missing_second_barrier_kernel<<<1, 64>>>(out.d, 2);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorSharedMemoryRace) << explain(e);
    const std::string text = cudaGetErrorString(e);
    const std::string read = "test_kernels.cu:" + std::to_string(kSecondBarrierReadLine);
    const std::string write = "test_kernels.cu:" + std::to_string(kSecondBarrierWriteLine);
    // Whichever warp the scheduler runs first, the two parties are two different warps, each
    // named with its lane and thread index: the reader of partials[i] is lane i of its warp.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex("warp ([01]) lane ([01]) \\(thread \\(([0-9]+),0,0\\)\\) read it at " +
                                                      read + ", then warp ([01]) lane 0 \\(thread \\(([0-9]+),0,0\\)\\) wrote it at " +
                                                      write)))
        << text;
    const int reader = std::stoi(m[1]), writer = std::stoi(m[4]);
    EXPECT_NE(reader, writer) << text;
    EXPECT_EQ(std::stoi(m[3]), reader * 32 + std::stoi(m[2])) << text;
    EXPECT_EQ(std::stoi(m[5]), writer * 32) << text;
    EXPECT_EQ(std::stoi(m[2]), writer) << text;  // the word is partials[writer]
    EXPECT_NE(text.find("no __syncthreads() between"), std::string::npos) << text;
}

__global__ void dynamic_shared_kernel(float* out, int n) {
    extern __shared__ __align__(16) unsigned char raw[];
    float* s = reinterpret_cast<float*>(raw);
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = static_cast<float>(i);
    __syncthreads();
    out[threadIdx.x] = s[n - 1 - threadIdx.x];
}

TEST_F(Emulator, DynamicSharedMemoryAboveTheDefaultNeedsTheAttribute) {
    const int n = 20000;  // 80000 bytes: more than the 48 KB default
    Buffer<float> out(32);
    dynamic_shared_kernel<<<1, 32, n * sizeof(float)>>>(out.d, n);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    ASSERT_EQ(cudaFuncSetAttribute(dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n * 4), cudaSuccess);
    dynamic_shared_kernel<<<1, 32, n * sizeof(float)>>>(out.d, n);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(out.get()[5], static_cast<float>(n - 6));
}

// ---- launch configuration ----------------------------------------------------------------

__global__ void empty_kernel(int*) {}

TEST_F(Emulator, LaunchConfigurationErrorsAreTheGpus) {
    empty_kernel<<<1, 1025>>>(nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    empty_kernel<<<dim3(1, 65536), 32>>>(nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    empty_kernel<<<0, 32>>>(nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    empty_kernel<<<dim3(70000), 32>>>(nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

/// Waits for a flag nobody sets (a volatile read lets the scheduler look at the watchdog).
__global__ void wait_forever_kernel(const int* flag) {
    const volatile int* f = flag;
    while (*f == 0) {
    }
}

TEST_F(Emulator, AKernelThatNeverEndsIsStoppedAfterItsCpuTime) {
    // The watchdog counts CPU time on every core, not wall time: a machine busy with other work
    // slows a long kernel down without making it a hang, and a real hang still ends.
    Buffer<int> flag(1);
    emu::set_watchdog_seconds(0.5);
    wait_forever_kernel<<<1, 32>>>(flag.d);
    const cudaError_t e = cudaDeviceSynchronize();
    emu::set_watchdog_seconds(20);
    ASSERT_EQ(e, cudaErrorLaunchTimeout) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("did not finish within"), std::string::npos)
        << cudaGetErrorString(e);
    // A kernel that is only slow here ends the same way: the message says how to give it longer.
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("WORKBOOK_WATCHDOG_SECONDS"), std::string::npos)
        << cudaGetErrorString(e);
}

// ---- device memory -----------------------------------------------------------------------

__global__ void read_past_end_kernel(const float* x, float* y, int n) { y[0] = x[n + 20000]; }

TEST_F(Emulator, ReadPastTheBufferIsAnIllegalAddress) {
    Buffer<float> x(16), y(1);
    read_past_end_kernel<<<1, 1>>>(x.d, y.d, 16);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("past the end of the 64-byte device buffer"), std::string::npos) << text;
}

__global__ void read_at_kernel(const float* x, float* y, int i) { y[0] = x[i]; }
__global__ void write_at_kernel(float* x, int i) { x[i] = 1.0f; }
__global__ void read_vector_at_kernel(const float* x, float4* y, int i) {
    y[0] = *reinterpret_cast<const float4*>(x + i);
}

TEST_F(Emulator, AReadOfAGuardZoneIsAnIllegalAddressAndAWriteIsLeftToTheGrader) {
    // 64 floats: a guard of 16 before and after a tensor of 32 (emu::set_read_window, as the
    // grader's DeviceTensor sets it).
    Buffer<float> buf(64), y(1);
    // The message of the fault the last launch ended in (an illegal address), the device reset after it.
    auto fault_text = [] {
        const cudaError_t e = cudaDeviceSynchronize();
        EXPECT_EQ(e, cudaErrorIllegalAddress) << explain(e);
        std::string text = cudaGetErrorString(e);
        cudaDeviceReset();
        return text;
    };
    emu::set_read_window(buf.d, 16 * sizeof(float), 48 * sizeof(float));
    read_at_kernel<<<1, 1>>>(buf.d, y.d, 47);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the tensor's last element is readable";
    read_at_kernel<<<1, 1>>>(buf.d, y.d, 48);
    std::string text = fault_text();
    EXPECT_NE(text.find("0 byte(s) past the end of the 128-byte tensor"), std::string::npos) << text;
    EXPECT_NE(text.find("guard zone after it"), std::string::npos) << text;
    read_at_kernel<<<1, 1>>>(buf.d, y.d, 14);
    text = fault_text();
    EXPECT_NE(text.find("8 byte(s) before the 128-byte tensor"), std::string::npos) << text;
    // A vector that starts inside the tensor and runs out of it.
    emu::set_read_window(buf.d, 16 * sizeof(float), 46 * sizeof(float));
    Buffer<float4> y4(1);
    read_vector_at_kernel<<<1, 1>>>(buf.d, y4.d, 44);
    text = fault_text();
    EXPECT_NE(text.find("its last 8 byte(s) past the end of the 120-byte tensor"), std::string::npos) << text;
    // A write there is the grader's to find (its guard check names the element).
    write_at_kernel<<<1, 1>>>(buf.d, 50);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

__global__ void copy_first_kernel(const float* x, float* y) { y[0] = x[0]; }

TEST_F(Emulator, FreedMemoryIsIllegalUntilAnAllocationOfItsSizeTakesItAgain) {
    // cudaMalloc gives freed memory back to the next allocation of the same size, so a grader that
    // allocates a case's tensors again for its next repetition gets the same addresses; a stale
    // pointer is illegal until then. (A size no other test allocates: freed ranges are per size.)
    constexpr size_t kBytes = 777777 * sizeof(float);
    float *a = nullptr, *b = nullptr, *again_a = nullptr, *again_b = nullptr;
    Buffer<float> out(1);
    ASSERT_EQ(cudaMalloc(&a, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, kBytes), cudaSuccess);
    ASSERT_EQ(cudaFree(a), cudaSuccess);
    ASSERT_EQ(cudaFree(b), cudaSuccess);
    copy_first_kernel<<<1, 1>>>(a, out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("already freed"), std::string::npos) << cudaGetErrorString(e);
    cudaDeviceReset();
    ASSERT_EQ(cudaMalloc(&again_a, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&again_b, kBytes), cudaSuccess);
    EXPECT_EQ(again_a, a) << "the lowest freed range is given back first";
    EXPECT_EQ(again_b, b);
    copy_first_kernel<<<1, 1>>>(a, out.d);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(again_a);
    cudaFree(again_b);
}

__global__ void misaligned_vector_kernel(const float* x, float4* y) {
    y[0] = *reinterpret_cast<const float4*>(x + 1);
}

TEST_F(Emulator, MisalignedVectorLoadIsReported) {
    Buffer<float> x(16);
    Buffer<float4> y(1);
    misaligned_vector_kernel<<<1, 1>>>(x.d, y.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("16-byte vector access"), std::string::npos);
}

// ---- streams and graphs ------------------------------------------------------------------

__global__ void add_one_kernel(int* p) { atomicAdd(p, 1); }

/// Every warp reads two words that thread 0 wrote: reads of several warps at once, no race.
__global__ void broadcast_read_kernel(float* out) {
    __shared__ float words[16];
    if (threadIdx.x == 0) words[8] = words[9] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = words[8] + words[9];
}

/// Warp w alone reads word 8 + w and writes it back: one warp per word, no race.
__global__ void one_warp_read_write_kernel(float* out) {
    __shared__ float words[16];
    const int w = threadIdx.x / 32;
    const float v = words[8 + w];
    words[8 + w] = v + 1.0f;
    out[threadIdx.x] = v;
}

TEST_F(Emulator, ReadsOfAnEarlierKernelAreNotARaceWithTheNextOne) {
    // The second kernel's shared memory is where the first one's was, on the same core: the
    // first kernel's reads by several warps are history, not reads the second one's write races.
    Buffer<float> out(64);
    broadcast_read_kernel<<<1, 64>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    one_warp_read_write_kernel<<<1, 64>>>(out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    EXPECT_EQ(e, cudaSuccess) << explain(e);
}

// ---- block order -------------------------------------------------------------------------

/// Thread 0 of each block records its block's index in the order the blocks ran.
__global__ void record_block_order(unsigned* order, unsigned* count) {
    if (threadIdx.x == 0) order[atomicAdd(count, 1u)] = blockIdx.x;
}

TEST_F(Emulator, ConsecutiveLaunchesOfAKernelTakeTheBlocksInDifferentOrders) {
    // The GPU runs blocks in no promised order: a sum whose order the blocks decide (a float
    // atomicAdd, a sum in the order blocks finish) must differ between two launches on the same
    // inputs, on one core as on many. Each launch draws its order from the seed; every second
    // launch of a kernel walks the first one's backwards, so its first block (among the first two
    // recorded: the cores take blocks in turn) is one the launch before took among its last two.
    constexpr unsigned kBlocks = 64;
    emu::set_schedule_seed(20240611);
    Buffer<unsigned> order(kBlocks), count(1);
    std::vector<std::vector<unsigned>> orders;
    std::set<unsigned> firsts;
    for (int launch = 0; launch < 6; ++launch) {
        count.set({0u});
        record_block_order<<<kBlocks, 32>>>(order.d, count.d);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(count.get()[0], kBlocks);
        orders.push_back(order.get());
        std::set<unsigned> seen(orders.back().begin(), orders.back().end());
        EXPECT_EQ(seen.size(), kBlocks) << "launch " << launch << " ran a block twice or left one out";
        firsts.insert(orders.back()[0]);
    }
    for (int launch = 1; launch < 6; ++launch) {
        EXPECT_NE(orders[launch], orders[launch - 1]) << "launches " << launch - 1 << " and " << launch;
        if (launch % 2 == 1) {
            const std::vector<unsigned>& before = orders[launch - 1];
            const std::set<unsigned> last_two{before[kBlocks - 1], before[kBlocks - 2], before[kBlocks - 3]};
            EXPECT_TRUE(last_two.count(orders[launch][0])) << "launch " << launch << " started at block "
                                                           << orders[launch][0];
        }
    }
    EXPECT_GE(firsts.size(), 3u) << "the launches do not start at varied blocks";
}

/// Lane 0 of each warp takes a ticket from a shared counter: the order the warps got there.
__global__ void record_warp_order(unsigned* order) {
    __shared__ unsigned ticket;
    if (threadIdx.x == 0) ticket = 0;
    __syncthreads();
    if (threadIdx.x % 32 == 0) order[blockIdx.x * (blockDim.x / 32) + atomicAdd(&ticket, 1u)] = threadIdx.x / 32;
}

TEST_F(Emulator, WarpsRunInAnOrderDrawnFromTheSeed) {
    // Which warp reaches a barrier or an atomic first is not promised on the GPU; here it is drawn
    // from the seed and the launch counter: launches differ, and the same seed gives the same orders.
    constexpr int kWarps = 8;
    Buffer<unsigned> order(kWarps);
    auto run = [&](uint64_t seed) {
        emu::set_schedule_seed(seed);
        std::vector<std::vector<unsigned>> orders;
        for (int launch = 0; launch < 8; ++launch) {
            record_warp_order<<<1, kWarps * 32>>>(order.d);
            EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            orders.push_back(order.get());
        }
        return orders;
    };
    const auto first = run(7), again = run(7), other = run(8);
    EXPECT_EQ(first, again) << "the same seed must schedule the same way";
    EXPECT_NE(first, other);
    std::set<std::vector<unsigned>> distinct(first.begin(), first.end());
    EXPECT_GE(distinct.size(), 6u) << "eight launches of 8 warps gave only " << distinct.size() << " orders";
    for (const auto& o : first) EXPECT_EQ(std::set<unsigned>(o.begin(), o.end()).size(), size_t(kWarps));
}

/// One block a row: each warp adds its part of the row's sum into shared memory with atomicAdd,
/// so the row's total depends on the order the warps arrive in (lesson 10's nondeterministic row sum).
__global__ void warp_atomic_row_sum(const float* x, float* out, int cols) {
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.0f;
    __syncthreads();
    float v = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += x[blockIdx.x * cols + c];
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) atomicAdd(&total, v);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

TEST_F(Emulator, ASumInWarpArrivalOrderDiffersBetweenTwoLaunches) {
    constexpr int kRows = 64, kCols = 1024;
    std::vector<float> h(kRows * kCols);
    uint32_t state = 12345;
    for (float& f : h) {
        state = state * 1664525u + 1013904223u;
        f = std::ldexp(static_cast<float>(state >> 8) / 16777216.0f - 0.5f, static_cast<int>(state % 24) - 12);
    }
    Buffer<float> x(h.size()), a(kRows), b(kRows);
    x.set(h);
    warp_atomic_row_sum<<<kRows, 256>>>(x.d, a.d, kCols);
    warp_atomic_row_sum<<<kRows, 256>>>(x.d, b.d, kCols);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_NE(a.get(), b.get()) << "every row's sum came out the same in two launches: the warps arrived in one order";
}

TEST_F(Emulator, CapturedLaunchesRunWhenTheGraphRuns) {
    Buffer<int> counter(1);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    add_one_kernel<<<3, 32, 0, s>>>(counter.d);
    cudaGraph_t g;
    ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT_EQ(counter.get()[0], 0);
    size_t nodes = 0;
    cudaGraphGetNodes(g, nullptr, &nodes);
    EXPECT_EQ(nodes, 1u);
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(counter.get()[0], 96);
    // A launch on the legacy default stream does not join a non-blocking stream's capture:
    // it runs at once, and the graph stays empty.
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    add_one_kernel<<<1, 1>>>(counter.d);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    cudaGraphGetNodes(g, nullptr, &nodes);
    EXPECT_EQ(nodes, 0u);
    EXPECT_EQ(counter.get()[0], 97);
    // A blocking stream's capture is broken by it, as on the GPU.
    cudaStream_t blocking;
    ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal), cudaSuccess);
    add_one_kernel<<<1, 1>>>(counter.d);
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureImplicit);
    EXPECT_EQ(cudaStreamEndCapture(blocking, &g), cudaErrorStreamCaptureInvalidated);
    cudaGraphExecDestroy(exec);
    cudaStreamDestroy(s);
    cudaStreamDestroy(blocking);
}

}  // namespace
