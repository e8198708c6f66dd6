/// @file launch_hooks.cpp
/// @brief The launch hooks. The grader executable defines the CUDA runtime's launch entry points and
/// exports them (launch_hooks.list), so a dlopen'd submission binds to them; each records the launch and
/// forwards to libcudart's own definition, found with dlsym(RTLD_NEXT).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "launch/launch_recorder.h"

namespace workbook {
namespace {

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

}  // namespace
}  // namespace workbook

// --- the hooks: exported from the executable by launch_hooks.list --------------------------

extern "C" {

/// What `<<<grid, block, shared, stream>>>` calls (crt/host_runtime.h, CUDA 12.8 and later).
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                         cudaStream_t stream) {
    using Fn = cudaError_t(CUDARTAPI*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("__cudaLaunchKernel"));
    const cudaError_t e = real(kernel, grid, block, args, shared, stream);
    workbook::record_launch(workbook::shape_of(grid, block, shared, false), stream, e);
    return e;
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                       cudaStream_t stream) {
    using Fn = cudaError_t(CUDARTAPI*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("cudaLaunchKernel"));
    const cudaError_t e = real(func, grid, block, args, shared, stream);
    workbook::record_launch(workbook::shape_of(grid, block, shared, false), stream, e);
    return e;
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
    using Fn = cudaError_t(CUDARTAPI*)(const cudaLaunchConfig_t*, const void*, void**);
    static const Fn real = reinterpret_cast<Fn>(workbook::real_symbol("cudaLaunchKernelExC"));
    const cudaError_t e = real(config, func, args);
    if (config)
        workbook::record_launch(workbook::shape_of(config->gridDim, config->blockDim, config->dynamicSmemBytes, true),
                         config->stream, e);
    return e;
}

}  // extern "C"
