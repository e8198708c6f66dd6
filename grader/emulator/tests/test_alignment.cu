/// @file test_alignment.cu
/// @brief Misaligned vector and struct accesses are a misaligned address, as on the GPU, even
///        where the CPU compiler splits the copy into narrower loads; cache-hinted loads and
///        stores move the same values as plain ones and are checked the same way.
#include <cuda_fp16.h>

#include <string>
#include <vector>

#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// Eight halves moved by one 16-byte access on the GPU (the alignment tells nvcc).
struct alignas(16) Pack {
    __half v[8];
};

constexpr int kPackLoadLine = __LINE__ + 4;
__global__ void pack_copy_kernel(const __half* w, float* out, int offset) {
    // Only two fields are used: g++ loads just those, nvcc loads the whole pack.
    const Pack* p = reinterpret_cast<const Pack*>(w + offset);
    const Pack copy = p[0];
    out[0] = __half2float(copy.v[0]) + __half2float(copy.v[3]);
}

TEST_F(Emulator, AMisalignedStructCopyIsAMisalignedAddressEvenWhenSplit) {
    Buffer<__half> w(64);
    Buffer<float> out(1);
    pack_copy_kernel<<<1, 1>>>(w.d, out.d, 1);  // one element past a 16-byte boundary
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("not a multiple of 16"), std::string::npos) << text;
    EXPECT_NE(text.find("test_alignment.cu:" + std::to_string(kPackLoadLine)), std::string::npos) << text;
}

TEST_F(Emulator, AnAlignedStructCopyIsFine) {
    Buffer<__half> w(64);
    Buffer<float> out(1);
    pack_copy_kernel<<<1, 1>>>(w.d, out.d, 8);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

__global__ void pack_store_kernel(__half* y, int offset) {
    Pack p;
    for (int i = 0; i < 8; ++i) p.v[i] = __float2half(1.0f);
    reinterpret_cast<Pack*>(y + offset)[0] = p;
}

TEST_F(Emulator, AMisalignedStructStoreIsAMisalignedAddress) {
    Buffer<__half> y(64);
    pack_store_kernel<<<1, 1>>>(y.d, 2);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("stores a whole"), std::string::npos);
}

__global__ void pack_field_kernel(const __half* w, float* out, int offset) {
    // One field through the struct type: nvcc loads 2 bytes here, which is not misaligned.
    out[0] = __half2float(reinterpret_cast<const Pack*>(w + offset)->v[1]);
}

TEST_F(Emulator, ReadingOneFieldIsAnAccessOfTheFieldsWidth) {
    Buffer<__half> w(64);
    Buffer<float> out(1);
    pack_field_kernel<<<1, 1>>>(w.d, out.d, 1);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- cache-hinted loads and stores ---------------------------------------------------------

__global__ void hints_kernel(const float4* in, float4* out, const float* s, float* t) {
    const float4 a = __ldg(in);
    const float4 b = __ldcs(in + 1);
    const float4 c = __ldcg(in + 2);
    const float4 d = __ldlu(in + 3);
    const float4 e = __ldcv(in + 4);
    __stcs(out, a);
    __stcg(out + 1, b);
    __stwb(out + 2, c);
    __stwt(out + 3, d);
    out[4] = e;
    __stcs(t, __ldcs(s) + __ldg(s + 1));
}

TEST_F(Emulator, CacheHintedLoadsAndStoresMoveTheValues) {
    std::vector<float4> h(5);
    for (int i = 0; i < 5; ++i) h[i] = make_float4(i, i + 0.25f, i + 0.5f, i + 0.75f);
    Buffer<float4> in(5), out(5);
    Buffer<float> s(2), t(1);
    in.set(h);
    s.set({1.5f, 2.0f});
    hints_kernel<<<1, 1>>>(in.d, out.d, s.d, t.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto o = out.get();
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(o[i].x, h[i].x) << i;
        EXPECT_EQ(o[i].w, h[i].w) << i;
    }
    EXPECT_EQ(t.get()[0], 3.5f);
}

__global__ void misaligned_hint_kernel(const float* x, float* y) {
    const float4 v = __ldcs(reinterpret_cast<const float4*>(x + 1));
    y[0] = v.x;
}

TEST_F(Emulator, AMisalignedCacheHintedVectorLoadIsAMisalignedAddress) {
    Buffer<float> x(16), y(1);
    misaligned_hint_kernel<<<1, 1>>>(x.d, y.d);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("test_alignment.cu"), std::string::npos)
        << cudaGetErrorString(e);
}

// ---- inline PTX loads with an L2 eviction policy ----------------------------------------------

/// 16 bytes from `p` under an L2 evict-last policy, written as a kernel would on the GPU.
__device__ uint4 load_evict_last(const void* p) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    uint4 v;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
    return v;
}

__global__ void policy_load_kernel(const unsigned* x, unsigned* y, int offset) {
    const uint4 v = load_evict_last(x + offset);
    unsigned policy_first;
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(policy_first) : "l"(x + 7), "l"(policy));
    y[0] = v.x;
    y[1] = v.y;
    y[2] = v.z;
    y[3] = v.w;
    y[4] = policy_first;
}

TEST_F(Emulator, LoadsWithAnL2PolicyMoveTheValues) {
    Buffer<unsigned> x(16), y(5);
    std::vector<unsigned> h(16);
    for (int i = 0; i < 16; ++i) h[i] = 100u + i;
    x.set(h);
    policy_load_kernel<<<1, 1>>>(x.d, y.d, 4);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(y.get(), (std::vector<unsigned>{104u, 105u, 106u, 107u, 107u}));
}

TEST_F(Emulator, AMisalignedLoadWithAnL2PolicyIsAMisalignedAddress) {
    Buffer<unsigned> x(16), y(5);
    policy_load_kernel<<<1, 1>>>(x.d, y.d, 2);  // 8 bytes past a 16-byte boundary
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("not a multiple of 16"), std::string::npos)
        << cudaGetErrorString(e);
}

// ---- bulk L2 prefetches: no value moves, but the operands are checked ------------------------

__global__ void bulk_prefetch_kernel(const float* x, int offset, int bytes, float* y) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(x + offset), "r"(bytes) : "memory");
    y[0] = x[0];
}

TEST_F(Emulator, ABulkPrefetchInsideABufferChangesNothing) {
    Buffer<float> x(64), y(1);
    x.set(std::vector<float>(64, 2.5f));
    bulk_prefetch_kernel<<<1, 1>>>(x.d, 16, 192, y.d);  // the last 48 floats
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(y.get()[0], 2.5f);
}

/// One bulk prefetch of `bytes` from element `offset` of a 64-float buffer: success when the launch fails
/// with `want` and its message names `why`.
testing::AssertionResult bulk_prefetch_refused(int offset, int bytes, cudaError_t want, const char* why) {
    Buffer<float> x(64), y(1);
    x.set(std::vector<float>(64, 1.0f));
    bulk_prefetch_kernel<<<1, 1>>>(x.d, offset, bytes, y.d);
    const cudaError_t e = cudaDeviceSynchronize();
    const std::string message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    if (e != want) return testing::AssertionFailure() << "expected " << cudaGetErrorName(want) << ", got " << message;
    if (message.find(why) == std::string::npos)
        return testing::AssertionFailure() << "the message does not say \"" << why << "\": " << message;
    return testing::AssertionSuccess();
}

TEST_F(Emulator, AMisalignedBulkPrefetchIsAMisalignedAddress) {
    EXPECT_TRUE(bulk_prefetch_refused(1, 16, cudaErrorMisalignedAddress, "bulk L2 prefetch"));
}

TEST_F(Emulator, ABulkPrefetchPastItsBufferIsAnIllegalAddress) {
    // 64 bytes past the end
    EXPECT_TRUE(bulk_prefetch_refused(16, 256, cudaErrorIllegalAddress, "not inside one device buffer"));
}

TEST_F(Emulator, ABulkPrefetchOfNoWholeChunkIsRefused) {
    EXPECT_TRUE(bulk_prefetch_refused(0, 24, cudaErrorInvalidValue, "positive multiple of 16"));
}

}  // namespace
