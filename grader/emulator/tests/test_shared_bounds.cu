/// @file test_shared_bounds.cu
/// @brief Shared memory ends where a GPU's does: an access past the dynamic part, or past the last
///        static slot of a kernel without dynamic shared memory, is an illegal address.
#include <string>

#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// Stages `n` floats in dynamic shared memory and one more past them (an overrun by one element),
/// alongside a static array that the overrun must not silently land in.
constexpr int kOverrunLine = __LINE__ + 5;
__global__ void dynamic_overrun_kernel(float* out, int n, bool overrun) {
    extern __shared__ float staged[];
    __shared__ float totals[64];
    for (int i = threadIdx.x; i < n; i += blockDim.x) staged[i] = 1.0f;
    if (overrun && threadIdx.x == 0) staged[n] = 2.0f;
    totals[threadIdx.x] = 0.0f;
    __syncthreads();
    out[threadIdx.x] = staged[threadIdx.x] + totals[threadIdx.x];
}

TEST_F(Emulator, AStorePastTheDynamicSharedMemoryIsAnIllegalAddress) {
    Buffer<float> out(64);
    dynamic_overrun_kernel<<<1, 64, 100 * sizeof(float)>>>(out.d, 100, true);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("writes 4 bytes at byte 0 past the end of the dynamic shared memory (400 bytes"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("test_shared_bounds.cu:" + std::to_string(kOverrunLine)), std::string::npos) << text;
}

TEST_F(Emulator, AccessesWithinTheDynamicAndStaticSharedMemoryRun) {
    Buffer<float> out(64);
    dynamic_overrun_kernel<<<2, 64, 100 * sizeof(float)>>>(out.d, 100, false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    for (float v : out.get()) EXPECT_EQ(v, 1.0f);
}

/// Reads one element past a static array, in a kernel launched without dynamic shared memory.
__global__ void static_overrun_kernel(float* out) {
    __shared__ float slots[8];
    slots[threadIdx.x % 8] = 1.0f;
    __syncthreads();
    volatile int past = 8;  // not folded: the compiler would reject a constant index past the end
    const float* base = slots;  // through a pointer: the array-bounds check (test_array_bounds.cu) sees no array
    out[threadIdx.x] = base[past + threadIdx.x % 8];
}

TEST_F(Emulator, AReadPastTheLastStaticSlotIsAnIllegalAddress) {
    Buffer<float> out(8);
    static_overrun_kernel<<<1, 8>>>(out.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("past the end of the static __shared__ memory"), std::string::npos) << text;
}

}  // namespace
