/// @file test_fp8_kernels.cu
/// @brief cuda_fp8.h inside kernels compiled exactly as submissions are: lesson 11's packed
///        stores (pairs through __nv_cvt_float2_to_fp8x2, an aligned pack of bytes) and the
///        __nv_fp8_e4m3 type in device memory give the toolkit's bytes, and a misaligned pack
///        store is reported like any other vector access.
#include <cuda_fp8.h>

#include <cstring>
#include <vector>

#include "fp8_toolkit.h"
#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

template <int N>
struct alignas(N) Bytes {
    __nv_fp8_storage_t v[N];
};

/// Thread t quantises values 8t..8t+7 (times `factor`, saturating) and stores them as one 8-byte pack.
__global__ void quantise_packs(const float* x, __nv_fp8_storage_t* q, float factor, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (8 * t >= n) return;
    Bytes<8> out;
    for (int k = 0; k < 8; k += 2) {
        const __nv_fp8x2_storage_t two =
            __nv_cvt_float2_to_fp8x2(make_float2(x[8 * t + k] * factor, x[8 * t + k + 1] * factor), __NV_SATFINITE, __NV_E4M3);
        out.v[k] = static_cast<__nv_fp8_storage_t>(two & 0xff);
        out.v[k + 1] = static_cast<__nv_fp8_storage_t>(two >> 8);
    }
    *reinterpret_cast<Bytes<8>*>(q + 8 * t) = out;
}

/// The type itself: q[i] = __nv_fp8_e4m3(x[i]), and back[i] = float(q[i]).
__global__ void through_the_type(const float* x, __nv_fp8_e4m3* q, float* back, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    q[i] = __nv_fp8_e4m3(x[i]);
    back[i] = static_cast<float>(q[i]);
}

std::vector<float> test_values(int n) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * 0.37f * static_cast<float>(i % 1300) + 0.001f * i;
    return x;
}

TEST_F(Emulator, Fp8PackedStoresGiveTheToolkitsBytes) {
    const int n = 4096;
    const float factor = 1.7f;  // past 448 for the larger values: they saturate
    Buffer<float> x(n);
    Buffer<__nv_fp8_storage_t> q(n);
    const std::vector<float> h = test_values(n);
    x.set(h);
    quantise_packs<<<n / 8 / 64, 64>>>(x.d, q.d, factor, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    const auto got = q.get();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], fp8_toolkit::from_float(h[i] * factor, true, true)) << i;
}

TEST_F(Emulator, Fp8TypeInDeviceMemory) {
    const int n = 3000;
    Buffer<float> x(n), back(n);
    Buffer<__nv_fp8_e4m3> q(n);
    const std::vector<float> h = test_values(n);
    x.set(h);
    through_the_type<<<(n + 255) / 256, 256>>>(x.d, q.d, back.d, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    const auto bytes = q.get();
    const auto values = back.get();
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(bytes[i].__x, fp8_toolkit::e4m3_of(h[i])) << i;
        ASSERT_EQ(values[i], fp8_toolkit::float_of_e4m3(fp8_toolkit::e4m3_of(h[i]))) << i;
    }
}

TEST_F(Emulator, Fp8PackStoreMustBeAligned) {
    const int n = 1024;
    Buffer<float> x(n);
    Buffer<__nv_fp8_storage_t> q(n + 8);
    x.set(test_values(n));
    quantise_packs<<<1, n / 8>>>(x.d, q.d + 1, 1.0f, n);  // one byte off: every 8-byte pack store is misaligned
    const cudaError_t e = cudaDeviceSynchronize();
    EXPECT_EQ(e, cudaErrorMisalignedAddress) << explain(e);
}

}  // namespace
