/// @file runtime_api.h
/// @brief The part of the CUDA runtime API the workbook uses, served by the emulator.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "emu/device.h"

enum cudaError_t : int {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchTimeout = 702,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    cudaErrorECCUncorrectable = 214,
    cudaErrorAssert = 710,
    cudaErrorNotSupported = 801,
    cudaErrorNotYetImplemented = 31,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureMerge = 902,
    cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorStreamCaptureImplicit = 906,
    cudaErrorCapturedEvent = 907,
    cudaErrorStreamCaptureWrongThread = 908,
    cudaErrorNoDevice = 100,
    cudaErrorUnknown = 999,
    /// Found by the emulator where the GPU would silently compute garbage or hang.
    cudaErrorEmulatorSharedMemoryRace = 10001,
    cudaErrorEmulatorDivergentBarrier = 10002,
    cudaErrorEmulatorWarpSync = 10003,
};

using cudaStream_t = struct CUstream_st*;
using cudaEvent_t = struct CUevent_st*;
using cudaGraph_t = struct CUgraph_st*;
using cudaGraphExec_t = struct CUgraphExec_st*;
using cudaGraphNode_t = struct CUgraphNode_st*;

#define cudaStreamDefault 0x0u
#define cudaStreamNonBlocking 0x1u
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 };
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxGridDimY = 6,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36,
    cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
    cudaFuncAttributeNonPortableClusterSizeAllowed = 12,
};
enum cudaLaunchAttributeID {
    cudaLaunchAttributeIgnore = 0,
    cudaLaunchAttributeClusterDimension = 4,
    cudaLaunchAttributeProgrammaticStreamSerialization = 6,
};
struct cudaLaunchAttributeValue {
    struct {
        unsigned x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
    cudaLaunchAttributeID id;
    cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute* attrs;
    unsigned numAttrs;
};
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    size_t sharedMemPerMultiprocessor;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major, minor;
    int multiProcessorCount;
    int l2CacheSize;
    int clockRate;
    int memoryClockRate;
    int memoryBusWidth;
};

cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph);
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDriverGetVersion(int* v);
cudaError_t cudaRuntimeGetVersion(int* v);
cudaError_t cudaCtxResetPersistingL2Cache();

namespace emu {

/// How a launch runs its threads.
enum class LaunchMode {
    fibers,  ///< one fiber per thread: barriers, warp lockstep, race checks (every submission)
    /// One call per thread, no barriers: the grader's own element-wise kernels, every one a
    /// grid-stride loop over blockIdx.x, so the emulator runs a large grid as a few blocks.
    plain,
};

/// Everything a launch needs besides the kernel and its arguments.
struct LaunchSpec {
    dim3 grid, block;
    size_t dynamic_smem = 0;
    cudaStream_t stream = nullptr;
    dim3 cluster{1, 1, 1};
    bool programmatic = false;  ///< cudaLaunchAttributeProgrammaticStreamSerialization
    bool from_config = false;   ///< launched through cudaLaunchKernelEx
    LaunchMode mode = LaunchMode::fibers;
    const void* kernel = nullptr;  ///< identifies the kernel (per-kernel attributes)
};

/// Validates the launch like the GPU, then runs (or, while capturing, records) it.
cudaError_t launch(const LaunchSpec& spec, std::function<void()> thread_body);
/// Called with every fiber-mode (submission) launch and the runtime's answer to it: the grader's view
/// of what a submission asked for, as the GPU grader's launch hooks give it.
using LaunchObserver = void (*)(const LaunchSpec& spec, cudaError_t result);
void set_launch_observer(LaunchObserver observer);
/// Per-kernel attribute storage (cudaFuncSetAttribute).
cudaError_t set_func_attribute(const void* kernel, cudaFuncAttribute attr, int value);

/// The kernel call of one thread: the arguments converted to the kernel's parameter types once.
template <typename... P, typename... A>
cudaError_t launch_kernel(LaunchSpec spec, void (*kernel)(P...), A&&... args) {
    static_assert(sizeof...(P) == sizeof...(A), "wrong number of kernel arguments");
    spec.kernel = reinterpret_cast<const void*>(kernel);
    auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
    return launch(spec, [kernel, params] { std::apply(kernel, *params); });
}

/// The `<<<grid, block, smem, stream>>>` form, after the source rewrite.
struct TripleChevron {
    LaunchSpec spec;
    TripleChevron(LaunchMode mode, dim3 g, dim3 b, size_t smem = 0, cudaStream_t s = nullptr) {
        spec.grid = g;
        spec.block = b;
        spec.dynamic_smem = smem;
        spec.stream = s;
        spec.mode = mode;
    }
    /// `call` invokes the kernel with one thread's copy of the arguments.
    template <typename Call, typename... A>
    void operator()(Call call, A&&... args) const {
        auto params = std::make_shared<std::tuple<std::decay_t<A>...>>(std::forward<A>(args)...);
        launch(spec, [call, params] { std::apply(call, *params); });
    }
};

}  // namespace emu

#ifndef EMU_LAUNCH_MODE
#define EMU_LAUNCH_MODE ::emu::LaunchMode::fibers
#endif

template <typename... P, typename... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(P...), A&&... args) {
    emu::LaunchSpec spec;
    spec.grid = config->gridDim;
    spec.block = config->blockDim;
    spec.dynamic_smem = config->dynamicSmemBytes;
    spec.stream = config->stream;
    spec.from_config = true;
    spec.mode = EMU_LAUNCH_MODE;
    for (unsigned i = 0; i < config->numAttrs; ++i) {
        const cudaLaunchAttribute& a = config->attrs[i];
        if (a.id == cudaLaunchAttributeClusterDimension)
            spec.cluster = dim3(a.val.clusterDim.x, a.val.clusterDim.y, a.val.clusterDim.z);
        else if (a.id == cudaLaunchAttributeProgrammaticStreamSerialization)
            spec.programmatic = a.val.programmaticStreamSerializationAllowed != 0;
    }
    return emu::launch_kernel(spec, kernel, std::forward<A>(args)...);
}

template <typename... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
    return emu::set_func_attribute(reinterpret_cast<const void*>(kernel), attr, value);
}

/// The typed forms the CUDA headers provide as templates.
template <typename T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
template <typename T>
cudaError_t cudaMallocAsync(T** p, size_t bytes, cudaStream_t stream) {
    return cudaMallocAsync(reinterpret_cast<void**>(p), bytes, stream);
}

cudaError_t emu_occupancy_max_active_clusters(int* count, const cudaLaunchConfig_t* config);
template <typename... P>
cudaError_t cudaOccupancyMaxActiveClusters(int* count, void (*)(P...), const cudaLaunchConfig_t* config) {
    return emu_occupancy_max_active_clusters(count, config);
}
