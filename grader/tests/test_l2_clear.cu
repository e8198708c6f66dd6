/// @file test_l2_clear.cu
/// @brief clear_l2 leaves a buffer cold even when a kernel read it under `L2::evict_last`.
///
/// Why: such lines survive a write of any size. A submission that loads its input under that
/// priority would then find part of it in L2 at its next timed sample, and a reference that
/// does (lesson 5's first read) would speed up whatever is timed after it.
///
/// How, without timing anything in wall-clock terms: one thread walks a random cycle through
/// the buffer's cache lines, each load depending on the last and bypassing L1, and counts SM
/// cycles per step. The same walk right after a plain read of the buffer gives the L2 hit
/// latency; after a plain read and clear_l2, the DRAM latency. Read under evict-last and then
/// cleared, the buffer must walk at DRAM latency: closer to the cold walk than to the warm one.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "engine/l2_clear.h"
#include "workbook/cuda_check.h"

namespace workbook {
namespace {

constexpr int kLineWords = 32;          ///< 128-byte lines of 4-byte words
constexpr int kLines = 32768;           ///< a 4 MiB buffer: far below L2, far above L1
constexpr int kSteps = 8192;            ///< lines visited per walk

/// Reads every word of `p` under an L2 evict-last policy (as inductor's and lesson 5's first reads do).
__global__ void read_evict_last(const unsigned* p, size_t words, unsigned* sink) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    unsigned acc = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        unsigned v;
        asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p + i), "l"(policy));
        acc ^= v;
    }
    if (acc == 0xdeadbeefu) *sink = acc;  // keeps the loads
}

/// Reads every word of `p` with plain loads.
__global__ void read_plain(const unsigned* p, size_t words, unsigned* sink) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        acc ^= __ldcg(p + i);
    if (acc == 0xdeadbeefu) *sink = acc;
}

/// One thread follows next[] for `steps` loads (L2 and beyond only) and writes cycles per step.
__global__ void walk(const unsigned* next, int steps, double* cycles_per_step, unsigned* sink) {
    unsigned at = 0;
    const long long start = clock64();
    for (int s = 0; s < steps; ++s) at = __ldcg(next + at);
    const long long stop = clock64();
    *cycles_per_step = static_cast<double>(stop - start) / steps;
    *sink = at;
}

class L2Clear : public ::testing::Test {
protected:
    void SetUp() override {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            (void)cudaGetLastError();
            GTEST_SKIP() << "no usable GPU";
        }
        // A random cycle through the lines: line order[i] points to line order[i + 1].
        std::vector<unsigned> order(kLines);
        std::iota(order.begin(), order.end(), 0u);
        std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
        std::vector<unsigned> next(static_cast<size_t>(kLines) * kLineWords, 0u);
        for (int i = 0; i < kLines; ++i)
            next[static_cast<size_t>(order[i]) * kLineWords] = order[(i + 1) % kLines] * kLineWords;
        WB_CUDA_CHECK(cudaMalloc(&next_, next.size() * sizeof(unsigned)));
        WB_CUDA_CHECK(cudaMemcpy(next_, next.data(), next.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
        WB_CUDA_CHECK(cudaMalloc(&sink_, sizeof(unsigned)));
        WB_CUDA_CHECK(cudaMalloc(&cycles_, sizeof(double)));
    }
    void TearDown() override {
        cudaFree(next_);
        cudaFree(sink_);
        cudaFree(cycles_);
    }

    /// Cycles per step of one walk, after `prepare` ran on the stream.
    template <typename Prepare>
    double walk_after(Prepare prepare) {
        prepare();
        walk<<<1, 1>>>(next_, kSteps, cycles_, sink_);
        WB_CUDA_CHECK(cudaGetLastError());
        double c = 0;
        WB_CUDA_CHECK(cudaMemcpy(&c, cycles_, sizeof(double), cudaMemcpyDeviceToHost));
        return c;
    }
    /// The median of five walks, each after its own `prepare`.
    template <typename Prepare>
    double median_walk(Prepare prepare) {
        std::vector<double> c;
        for (int i = 0; i < 5; ++i) c.push_back(walk_after(prepare));
        std::sort(c.begin(), c.end());
        return c[2];
    }
    void read(bool evict_last) {
        const size_t words = static_cast<size_t>(kLines) * kLineWords;
        if (evict_last) {
            read_evict_last<<<264, 256>>>(next_, words, sink_);
        } else {
            read_plain<<<264, 256>>>(next_, words, sink_);
        }
        WB_CUDA_CHECK(cudaGetLastError());
        WB_CUDA_CHECK(cudaDeviceSynchronize());
    }

    unsigned* next_ = nullptr;
    unsigned* sink_ = nullptr;
    double* cycles_ = nullptr;
};

TEST_F(L2Clear, LeavesABufferReadUnderEvictLastCold) {
    const double warm = median_walk([&] { read(false); });
    const double cold = median_walk([&] {
        read(false);
        clear_l2(nullptr);
    });
    const double pinned = median_walk([&] {
        read(true);
        clear_l2(nullptr);
    });
    std::printf("cycles per step: warm (in L2) %.0f, cold (cleared) %.0f, read under evict-last then cleared %.0f\n",
                warm, cold, pinned);
    if (!(warm < 0.8 * cold)) GTEST_SKIP() << "this device's L2 and DRAM latencies are too close to tell apart";
    EXPECT_GT(pinned, warm + 0.5 * (cold - warm))
        << "a buffer read under L2::evict_last was still in L2 after clear_l2 (" << pinned
        << " cycles per step; " << warm << " in L2, " << cold << " from DRAM): a timed sample would "
        << "start with part of its input cached";
}

}  // namespace
}  // namespace workbook
