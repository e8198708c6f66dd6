// A stand-in submission for test_launch_recorder: launches the runtime always refuses (so no kernel
// runs, with or without a GPU), made the ways submissions make them.
#include <cuda_runtime.h>

namespace {
__global__ void probe_kernel(int* out) {
    if (out) out[0] = 1;
}
}  // namespace

/// `<<<...>>>` with gridDim.y past 65535, on the given stream.
extern "C" __attribute__((visibility("default"))) cudaError_t probe_grid_y(cudaStream_t stream) {
    probe_kernel<<<dim3(1, 70001), 256, 0, stream>>>(nullptr);
    return cudaSuccess;  // the error is swallowed, as the submissions that motivated the recorder did
}

/// cudaLaunchKernelEx with 2048 threads per block and the config's stream never set.
extern "C" __attribute__((visibility("default"))) cudaError_t probe_config_unset(cudaStream_t) {
    cudaLaunchConfig_t config = {};
    config.blockDim = dim3(2048);
    return cudaLaunchKernelEx(&config, probe_kernel, static_cast<int*>(nullptr));
}
