/// @file launch_recorder.cpp
/// @brief The recording the launch hooks feed: on the GPU launch_hooks.cpp, on the CPU
/// emulator its launch observer.
#include "launch/launch_recorder.h"

#include <cstdio>
#include <string>

namespace workbook {
namespace {

std::vector<RecordedLaunch>* g_sink = nullptr;  ///< the live recording's list, or nullptr

}  // namespace

LaunchShape shape_of(dim3 grid, dim3 block, size_t shared, bool from_config) {
    LaunchShape s;
    s.grid[0] = grid.x, s.grid[1] = grid.y, s.grid[2] = grid.z;
    s.block[0] = block.x, s.block[1] = block.y, s.block[2] = block.z;
    s.shared_bytes = shared;
    s.from_config = from_config;
    return s;
}

void record_launch(const LaunchShape& shape, cudaStream_t stream, cudaError_t result) {
    // A runaway loop of launches must not grow the list without bound.
    if (g_sink && g_sink->size() < 256) g_sink->push_back(RecordedLaunch{shape, stream, result});
}

LaunchRecording::LaunchRecording() { g_sink = &launches_; }
LaunchRecording::~LaunchRecording() { stop(); }
void LaunchRecording::stop() {
    if (active_ && g_sink == &launches_) g_sink = nullptr;
    active_ = false;
}

const LaunchLimits& device_launch_limits() {
    static const LaunchLimits limits = [] {
        LaunchLimits l;
        int device = 0;
        cudaDeviceProp p{};
        if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess) {
            cudaGetLastError();
            return l;
        }
        for (int i = 0; i < 3; ++i) {
            l.max_grid[i] = static_cast<uint64_t>(p.maxGridSize[i]);
            l.max_block[i] = static_cast<uint64_t>(p.maxThreadsDim[i]);
        }
        l.max_threads = static_cast<uint64_t>(p.maxThreadsPerBlock);
        l.max_shared_default = p.sharedMemPerBlock;
        l.max_shared_optin = p.sharedMemPerBlockOptin;
        return l;
    }();
    return limits;
}

std::string describe_stream(cudaStream_t stream) {
    if (stream == nullptr || stream == cudaStreamLegacy) return "the legacy default stream (stream 0)";
    if (stream == cudaStreamPerThread) return "the per-thread default stream";
    char buf[64];
    std::snprintf(buf, sizeof buf, "another stream (%p)", static_cast<void*>(stream));
    return buf;
}

}  // namespace workbook

