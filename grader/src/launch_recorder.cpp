/// @file launch_recorder.cpp
/// @brief The launch hooks. They forward to libcudart's definitions, found with dlsym(RTLD_NEXT).
#include "launch_recorder.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace workbook {
namespace {

std::vector<RecordedLaunch>* g_sink = nullptr;  ///< the live recording's list, or nullptr

/// libcudart's own definition of `name`; the run cannot go on without it.
void* real_symbol(const char* name) {
    void* f = dlsym(RTLD_NEXT, name);
    if (!f) {
        std::fprintf(stderr, "wb-grader: the CUDA runtime has no %s (%s); the grader was built against another "
                             "CUDA version\n", name, dlerror());
        std::abort();
    }
    return f;
}

LaunchShape shape_of(dim3 grid, dim3 block, size_t shared, bool from_config) {
    LaunchShape s;
    s.grid[0] = grid.x, s.grid[1] = grid.y, s.grid[2] = grid.z;
    s.block[0] = block.x, s.block[1] = block.y, s.block[2] = block.z;
    s.shared_bytes = shared;
    s.from_config = from_config;
    return s;
}

void record(const LaunchShape& shape, cudaStream_t stream, cudaError_t result) {
    // A runaway loop of launches must not grow the list without bound.
    if (g_sink && g_sink->size() < 256) g_sink->push_back(RecordedLaunch{shape, stream, result});
}

}  // namespace

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

// --- the hooks: exported from the executable by launch_hooks.list --------------------------

extern "C" {

/// What `<<<grid, block, shared, stream>>>` calls (crt/host_runtime.h, CUDA 12.8 and later).
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                         cudaStream_t stream) {
    using Fn = cudaError_t(CUDARTAPI*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("__cudaLaunchKernel"));
    const cudaError_t e = real(kernel, grid, block, args, shared, stream);
    workbook::record(workbook::shape_of(grid, block, shared, false), stream, e);
    return e;
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                       cudaStream_t stream) {
    using Fn = cudaError_t(CUDARTAPI*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("cudaLaunchKernel"));
    const cudaError_t e = real(func, grid, block, args, shared, stream);
    workbook::record(workbook::shape_of(grid, block, shared, false), stream, e);
    return e;
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
    using Fn = cudaError_t(CUDARTAPI*)(const cudaLaunchConfig_t*, const void*, void**);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("cudaLaunchKernelExC"));
    const cudaError_t e = real(config, func, args);
    if (config)
        workbook::record(workbook::shape_of(config->gridDim, config->blockDim, config->dynamicSmemBytes, true),
                         config->stream, e);
    return e;
}

}  // extern "C"
