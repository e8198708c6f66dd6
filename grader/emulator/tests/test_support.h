/// @file test_support.h
/// @brief What the emulator's tests share: a device buffer and a fixture that resets the device.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace emu_test {

/// Device buffer of n values, copied back on demand.
template <typename T>
struct Buffer {
    T* d = nullptr;
    size_t n;
    explicit Buffer(size_t count) : n(count) {
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), n * sizeof(T)), cudaSuccess);
        cudaMemset(d, 0, n * sizeof(T));
    }
    ~Buffer() { cudaFree(d); }
    std::vector<T> get() const {
        std::vector<T> h(n);
        EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
        return h;
    }
    void set(const std::vector<T>& h) {
        EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
};

/// Each test starts with a clean device: a sticky fault of one test must not leak into the next.
class Emulator : public testing::Test {
protected:
    void TearDown() override { cudaDeviceReset(); }
    static std::string explain(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }
};

}  // namespace emu_test
