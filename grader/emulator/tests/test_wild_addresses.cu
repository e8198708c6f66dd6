/// @file test_wild_addresses.cu
/// @brief An access far from every buffer (a 32-bit head index that wrapped and was sign-extended,
///        an offset of 2^40 bytes, a null pointer) is an illegal-address fault naming the line, as on
///        a GPU, and not a crash of the process; a kernel's own globals and locals run as before.
#include <cstdint>
#include <string>

#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

constexpr int kWildReadLine = __LINE__ + 3;
__global__ void wild_read(const float* x, long long offset_bytes, float* out) {
    const float* p = reinterpret_cast<const float*>(reinterpret_cast<const char*>(x) + offset_bytes);
    out[threadIdx.x] = *p;
}

constexpr int kWildWriteLine = __LINE__ + 3;
__global__ void wild_write(float* y, long long offset_bytes) {
    float* p = reinterpret_cast<float*>(reinterpret_cast<char*>(y) + offset_bytes);
    *p = 1.0f;
}

/// A load the compiler's instrumentation does not see (as GCC leaves some aggregate copies): only
/// the SIGSEGV it raises tells.
constexpr int kHiddenReadLine = __LINE__ + 2;
__device__ __attribute__((noinline, no_sanitize("thread"))) float unseen_load(const float* p) {
    return *p;
}

__global__ void hidden_read(const float* x, long long offset_bytes, float* out) {
    out[threadIdx.x] = unseen_load(reinterpret_cast<const float*>(reinterpret_cast<const char*>(x) + offset_bytes));
}

/// The fault's text, after checking that the launch failed with an illegal address.
std::string illegal_address_text(cudaError_t e) {
    EXPECT_EQ(e, cudaErrorIllegalAddress) << cudaGetErrorName(e) << ": " << cudaGetErrorString(e);
    return cudaGetErrorString(e);
}

constexpr long long kWrappedHeads = -(1ll << 32) * 2;  ///< -2^32 fp16 elements: still in the device range
constexpr long long kBelowTheRange = -(1ll << 40);
constexpr long long kAboveTheRange = 1ll << 41;

/// The fault's text of a read at `offset_bytes` from a buffer; the device is reset after it (the
/// fault is sticky, as on a GPU).
std::string wild_read_text(long long offset_bytes) {
    std::string text;
    {
        Buffer<float> x(256), out(32);
        wild_read<<<1, 32>>>(x.d, offset_bytes, out.d);
        text = illegal_address_text(cudaDeviceSynchronize());
    }
    cudaDeviceReset();
    return text;
}

TEST_F(Emulator, AReadFarOutsideEveryBufferIsAnIllegalAddressNamingTheLine) {
    const std::string line = "test_wild_addresses.cu:" + std::to_string(kWildReadLine);
    for (long long offset : {kWrappedHeads, kBelowTheRange, kAboveTheRange}) {
        const std::string text = wild_read_text(offset);
        EXPECT_NE(text.find("illegal address: block (0,0,0) thread ("), std::string::npos) << text;
        EXPECT_NE(text.find(" reads "), std::string::npos) << text;
        EXPECT_NE(text.find(line), std::string::npos) << text;
        if (offset != kWrappedHeads) EXPECT_NE(text.find("not inside any allocation"), std::string::npos) << text;
    }
}

TEST_F(Emulator, AWriteFarOutsideEveryBufferIsAnIllegalAddressNamingTheLine) {
    Buffer<float> y(256);
    wild_write<<<1, 32>>>(y.d, kAboveTheRange);
    const std::string text = illegal_address_text(cudaDeviceSynchronize());
    EXPECT_NE(text.find(" writes "), std::string::npos) << text;
    EXPECT_NE(text.find("not inside any allocation"), std::string::npos) << text;
    EXPECT_NE(text.find("test_wild_addresses.cu:" + std::to_string(kWildWriteLine)), std::string::npos) << text;
}

TEST_F(Emulator, ANullPointerReadIsAnIllegalAddress) {
    Buffer<float> out(32);
    wild_read<<<1, 32>>>(nullptr, 0, out.d);
    const std::string text = illegal_address_text(cudaDeviceSynchronize());
    EXPECT_NE(text.find("at 0x0, not inside any allocation (a null pointer"), std::string::npos) << text;
}

/// The fault's text of hidden_read at `offset_bytes` from a buffer, or "" when it ran; the device is
/// reset after a fault.
std::string hidden_read_text(long long offset_bytes) {
    std::string text;
    {
        Buffer<float> x(256), out(32);
        hidden_read<<<1, 32>>>(x.d, offset_bytes, out.d);
        const cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess) return text;
        text = illegal_address_text(e);
    }
    cudaDeviceReset();
    return text;
}

TEST_F(Emulator, AnUninstrumentedWildLoadIsAnIllegalAddressNotACrash) {
    const std::string line = "test_wild_addresses.cu:" + std::to_string(kHiddenReadLine);
    const std::string text = hidden_read_text(kBelowTheRange);
    EXPECT_NE(text.find("illegal address: block (0,0,0) thread ("), std::string::npos) << text;
    EXPECT_NE(text.find(" reads at 0x"), std::string::npos) << text;
    EXPECT_NE(text.find("not inside any allocation"), std::string::npos) << text;
    EXPECT_NE(text.find(line), std::string::npos) << text;
    // Again (the fiber left the handler for the scheduler and never returned: the signal must not
    // stay blocked), past the end of the range, then a read within the buffer runs.
    const std::string again = hidden_read_text(kAboveTheRange);
    EXPECT_NE(again.find("not inside any allocation"), std::string::npos) << again;
    EXPECT_NE(again.find(line), std::string::npos) << again;
    EXPECT_EQ(hidden_read_text(0), "");
}

__device__ float g_scale = 2.0f;
__constant__ float c_bias[4] = {1.0f, 2.0f, 3.0f, 4.0f};

/// Memory outside the device range that a kernel may touch: its module's globals, a local array
/// whose address escapes, the launch's indices.
__device__ __noinline__ float sum_of(const float* v, int n) {
    float s = 0;
    for (int k = 0; k < n; ++k) s += v[k];
    return s;
}

__global__ void own_memory(float* out) {
    float local[4];
    for (int k = 0; k < 4; ++k) local[k] = c_bias[k] * g_scale + static_cast<float>(threadIdx.x);
    out[threadIdx.x + blockIdx.x * blockDim.x] = sum_of(local, 4);
}

TEST_F(Emulator, AKernelsGlobalsAndLocalsOutsideTheDeviceRangeRun) {
    Buffer<float> out(64);
    own_memory<<<2, 32>>>(out.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    const auto v = out.get();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(v[i], 20.0f + 4.0f * static_cast<float>(i % 32)) << i;
}

}  // namespace
