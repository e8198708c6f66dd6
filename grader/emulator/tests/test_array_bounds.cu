/// @file test_array_bounds.cu
/// @brief An index past the end of a thread's own array (a register array on a GPU) is a fault that
///        names the array's type, the index and the line; indices within it run as before.
#include <string>

#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// VEC values of a pack, one more than VEC when `overrun` (the `k <= VEC` slip).
template <int VEC>
struct Pack {
    float v[VEC];
};

constexpr int kOverrunLine = __LINE__ + 5;
template <int VEC>
__global__ void pack_kernel(float* out, int extra) {
    Pack<VEC> p;
    float squares[VEC];
    for (int k = 0; k < VEC + extra; ++k) p.v[k] = static_cast<float>(k);
    for (int k = 0; k < VEC; ++k) squares[k] = p.v[k] * p.v[k];
    float s = 0;
    for (int k = 0; k < VEC; ++k) s += squares[k];
    out[threadIdx.x] = s;
}

TEST_F(Emulator, AnIndexPastAThreadsArrayIsAFaultNamingTheArray) {
    Buffer<float> out(32);
    pack_kernel<4><<<1, 32>>>(out.d, 1);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("index 4 is out of bounds of an array of type 'float [4]' at test_array_bounds.cu:" +
                        std::to_string(kOverrunLine)),
              std::string::npos)
        << text;
}

TEST_F(Emulator, IndicesWithinAThreadsArrayRun) {
    Buffer<float> out(32);
    pack_kernel<4><<<1, 32>>>(out.d, 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << explain(cudaGetLastError());
    for (float v : out.get()) EXPECT_EQ(v, 14.0f);
}

}  // namespace
