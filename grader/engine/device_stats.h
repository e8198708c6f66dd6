/// @file device_stats.h
/// @brief The counters a grader check kernel fills (wrong elements, unwritten ones, the first wrong
///        index), in device memory ordered on the check's stream.
#pragma once

#include <cuda_runtime.h>

#include "engine/launch_guard.h"
#include "workbook/cuda_check.h"

namespace workbook {

/// What a check kernel counts; `first` starts at its maximum and is lowered with atomicMin.
/// `nan`: wrong elements that hold a NaN the kernel wrote (not the poison).
struct DeviceStats {
    unsigned long long bad, unwritten, first, nan;
};

/// Device-side counters, zeroed, with `first` at its maximum.
class StatsBuffer {
public:
    explicit StatsBuffer(cudaStream_t stream) : stream_(stream) {
        WB_CUDA_CHECK(cudaMallocAsync(&d_, sizeof(DeviceStats), stream));
        const DeviceStats init{0, 0, ~0ull, 0};
        WB_CUDA_CHECK(cudaMemcpyAsync(d_, &init, sizeof init, cudaMemcpyHostToDevice, stream));
    }
    ~StatsBuffer() {
        if (!device_hung()) cudaFreeAsync(d_, stream_);
    }
    StatsBuffer(const StatsBuffer&) = delete;
    StatsBuffer& operator=(const StatsBuffer&) = delete;
    DeviceStats* get() const { return d_; }
    /// Waits for the stream, then returns the counters.
    DeviceStats read() const {
        DeviceStats h{};
        WB_CUDA_CHECK(cudaMemcpyAsync(&h, d_, sizeof h, cudaMemcpyDeviceToHost, stream_));
        WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
        return h;
    }

private:
    cudaStream_t stream_;
    DeviceStats* d_ = nullptr;
};

}  // namespace workbook
