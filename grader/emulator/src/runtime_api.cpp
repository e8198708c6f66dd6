/// @file runtime_api.cpp
/// @brief The CUDA runtime calls: memory, streams with graph capture, graphs, events,
///        errors, device properties, and launch validation as the GPU does it.
///
/// Work runs when it is issued (the emulated device has one in-order queue), except while
/// a stream captures a graph: then it is recorded and runs when the graph is launched. A
/// kernel launch is held back until the next thing the stream does: when that is a launch with
/// programmatic stream serialization, the new grid runs first and the held one runs when the
/// new grid waits on it (programmatic dependent launch, see docs/emulator.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "emu/control.h"
#include "internal.h"

namespace emu {
/// One piece of stream work: a kernel launch (run with the grid it may depend on) or anything else.
struct Work {
    std::function<void(const std::shared_ptr<HeldKernel>&)> kernel;
    std::function<void()> other;
    bool programmatic = false;  ///< a launch with programmatic stream serialization
};
}  // namespace emu

struct CUstream_st {
    unsigned flags = 0;
    bool capturing = false;
    bool invalidated = false;
    std::vector<emu::Work> nodes;
};
struct CUgraph_st {
    std::vector<emu::Work> nodes;
};
struct CUgraphExec_st {
    std::vector<emu::Work> nodes;
};
struct CUevent_st {
    std::chrono::steady_clock::time_point when{};
};

namespace emu {
namespace {

std::recursive_mutex g_mu;
cudaError_t g_last_error = cudaSuccess;
cudaError_t g_sticky = cudaSuccess;
Fault g_pending;          ///< a kernel's fault not yet reported by a synchronising call
std::string g_fault_text;  ///< the explanation of the latest fault, for cudaGetErrorString
cudaStream_t g_capturing = nullptr;
std::map<const void*, int> g_max_dynamic_smem;

bool is_sticky_code(cudaError_t e) {
    return e == cudaErrorIllegalAddress || e == cudaErrorMisalignedAddress || e == cudaErrorLaunchFailure ||
           e == cudaErrorIllegalInstruction || e == cudaErrorHardwareStackError || e == cudaErrorLaunchTimeout;
}

cudaError_t fail(cudaError_t e) {
    g_last_error = e;
    return e;
}

void flush_held();

/// What a synchronising call returns, once the stream's work is done: the sticky error, else a
/// kernel fault not yet reported.
cudaError_t take_async_error() {
    flush_held();
    if (g_sticky != cudaSuccess) return g_sticky;
    if (g_pending.code != cudaSuccess) {
        const cudaError_t e = g_pending.code;
        g_pending = Fault{};
        return e;
    }
    return cudaSuccess;
}

/// A synchronising call made while a graph is captured breaks the capture, as on the GPU.
bool breaks_capture() {
    if (!g_capturing) return false;
    g_capturing->invalidated = true;
    return true;
}

/// The latest kernel launch, not run yet: the next work runs it first, unless that work is a
/// programmatic launch, which runs first and takes it as the grid it depends on.
std::shared_ptr<HeldKernel> g_held;

/// Runs the held kernel, if any (every call that needs the stream's earlier work done).
void flush_held() {
    std::shared_ptr<HeldKernel> held = std::move(g_held);
    g_held.reset();
    if (held) held->complete();
}

void run_now(const Work& work) {
    if (!work.kernel) {
        flush_held();
        work.other();
        return;
    }
    std::shared_ptr<HeldKernel> prerequisite;
    if (work.programmatic) prerequisite = std::move(g_held);
    else flush_held();
    g_held.reset();
    auto run = work.kernel;
    g_held = std::make_shared<HeldKernel>([run, prerequisite] { run(prerequisite); });
}

/// The stream object behind a handle; nullptr for the legacy and per-thread default streams.
cudaStream_t object(cudaStream_t s) { return s == cudaStreamLegacy || s == cudaStreamPerThread ? nullptr : s; }
bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

/// Either records `work` into the capturing stream or runs it now.
cudaError_t issue(cudaStream_t s, Work work) {
    // Work that comes after the held kernel in stream order sees its outcome, a sticky fault included.
    const bool capturing = object(s) && s->capturing;
    if (!capturing && !(work.kernel && work.programmatic)) flush_held();
    if (g_sticky != cudaSuccess) return g_sticky;
    if (capturing) {
        s->nodes.push_back(std::move(work));
        return cudaSuccess;
    }
    if (g_capturing && is_legacy(s) && !(g_capturing->flags & cudaStreamNonBlocking)) {
        // The legacy default stream synchronises with a blocking stream, so it cannot join its capture.
        g_capturing->invalidated = true;
        return fail(cudaErrorStreamCaptureImplicit);
    }
    run_now(work);
    return cudaSuccess;
}

std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

}  // namespace

void set_pending_fault(const Fault& f) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    g_fault_text = f.text;
    if (is_sticky_code(f.code)) g_sticky = f.code;
    else if (g_pending.code == cudaSuccess) g_pending = f;
}

cudaError_t set_func_attribute(const void* kernel, cudaFuncAttribute attr, int value) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || static_cast<std::size_t>(value) > DeviceLimits::optin_smem) return fail(cudaErrorInvalidValue);
        g_max_dynamic_smem[kernel] = value;
    }
    return cudaSuccess;
}

/// The GPU's launch checks, in the GPU's order; cudaSuccess when the launch may run.
cudaError_t validate(const LaunchSpec& s, std::string& why) {
    const dim3 b = s.block, g = s.grid;
    if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0) {
        why = "a grid or block dimension is 0: grid " + dims(g) + ", block " + dims(b);
        return cudaErrorInvalidConfiguration;
    }
    if (b.x > 1024 || b.y > 1024 || b.z > 64 || uint64_t(b.x) * b.y * b.z > DeviceLimits::max_threads) {
        why = "block " + dims(b) + " has more than 1024 threads (or a dimension past its limit)";
        return cudaErrorInvalidConfiguration;
    }
    if (g.x > DeviceLimits::max_grid_x || g.y > DeviceLimits::max_grid_yz || g.z > DeviceLimits::max_grid_yz) {
        why = "grid " + dims(g) + ": gridDim.y and gridDim.z may not exceed 65535";
        return cudaErrorInvalidConfiguration;
    }
    int limit = static_cast<int>(DeviceLimits::static_smem);
    if (s.kernel) {
        auto it = g_max_dynamic_smem.find(s.kernel);
        if (it != g_max_dynamic_smem.end()) limit = it->second;
    } else {
        // A <<<>>> launch does not name its kernel to the emulator (the call may deduce
        // template arguments): it gets the largest limit any kernel was given.
        for (const auto& [k, v] : g_max_dynamic_smem) limit = std::max(limit, v);
    }
    if (s.dynamic_smem > static_cast<std::size_t>(limit)) {
        why = std::to_string(s.dynamic_smem) + " bytes of dynamic shared memory, more than the " +
              std::to_string(limit) + " the kernel may use (cudaFuncSetAttribute raises it up to 227 KB)";
        return cudaErrorInvalidValue;
    }
    const unsigned cl = s.cluster.x * s.cluster.y * s.cluster.z;
    if (cl > 1) {
        if (g.x % s.cluster.x || g.y % s.cluster.y || g.z % s.cluster.z || cl > DeviceLimits::max_cluster_nonportable) {
            why = "cluster " + dims(s.cluster) + " does not divide grid " + dims(g) + " or is larger than 16 blocks";
            return cudaErrorInvalidValue;
        }
        if (uint64_t(s.dynamic_smem) * 1 > DeviceLimits::smem_per_sm) return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

namespace {
LaunchObserver g_observer = nullptr;

cudaError_t observed(const LaunchSpec& spec, cudaError_t result) {
    if (g_observer && spec.mode == LaunchMode::fibers) g_observer(spec, result);
    return result;
}
}  // namespace

void set_launch_observer(LaunchObserver observer) { g_observer = observer; }

cudaError_t launch(const LaunchSpec& spec, std::function<void()> body) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (g_sticky != cudaSuccess) return observed(spec, fail(g_sticky));
    std::string why;
    const cudaError_t invalid = validate(spec, why);
    if (invalid != cudaSuccess) {
        g_fault_text = why;
        return observed(spec, fail(invalid));
    }
    auto shared_body = std::make_shared<std::function<void()>>(std::move(body));
    Work work;
    work.programmatic = spec.programmatic;
    work.kernel = [spec, shared_body](const std::shared_ptr<HeldKernel>& prerequisite) {
        const Fault f = execute(spec, *shared_body, prerequisite);
        if (f.code != cudaSuccess) set_pending_fault(f);
    };
    const cudaError_t e = issue(spec.stream, std::move(work));
    return observed(spec, e);
}

}  // namespace emu

using namespace emu;

// ---- memory ------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** p, size_t bytes) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (g_sticky != cudaSuccess) return fail(g_sticky);
    *p = device_alloc(bytes);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* p) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (!p) return cudaSuccess;
    flush_held();  // cudaFree waits for the device: a held kernel may still use the buffer
    return device_free(p) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMallocHost(void** p, size_t bytes) {
    *p = std::malloc(bytes);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void* p) {
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (!device_range_ok(dst, bytes) || !device_range_ok(src, bytes)) return fail(cudaErrorInvalidValue);
    return issue(s, Work{nullptr, [dst, src, bytes] {
                         materialize(src, bytes);  // a lazy range of a sampled call gets its contents first
                         materialize(dst, bytes);
                         std::memmove(dst, src, bytes);
                     }});
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (breaks_capture()) return fail(cudaErrorStreamCaptureImplicit);
    const cudaError_t e = take_async_error();
    if (e != cudaSuccess) return e;
    return cudaMemcpyAsync(dst, src, bytes, kind, cudaStreamLegacy);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (!device_range_ok(p, bytes)) return fail(cudaErrorInvalidValue);
    return issue(s, Work{nullptr, [p, value, bytes] {
                         materialize(p, bytes);  // a lazy range of a sampled call gets its contents first
                         std::memset(p, value, bytes);
                     }});
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, cudaStreamLegacy); }

// ---- streams and graphs ------------------------------------------------------------------

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
    *s = new CUstream_st;
    (*s)->flags = flags;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete object(s);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (object(s) && s->capturing) {
        s->invalidated = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (is_legacy(s) && breaks_capture()) return fail(cudaErrorStreamCaptureImplicit);
    return take_async_error();
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (object(s) && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
    return take_async_error();
}
cudaError_t cudaDeviceSynchronize() {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (breaks_capture()) return fail(cudaErrorStreamCaptureUnsupported);
    return take_async_error();
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (!object(s) || s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
    s->capturing = true;
    s->invalidated = false;
    s->nodes.clear();
    g_capturing = s;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    *graph = nullptr;
    if (!object(s) || !s->capturing) return fail(cudaErrorInvalidValue);
    s->capturing = false;
    if (g_capturing == s) g_capturing = nullptr;
    if (s->invalidated) {
        s->nodes.clear();
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    *graph = new CUgraph_st{std::move(s->nodes)};
    s->nodes.clear();
    return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t*, size_t* count) {
    if (!g) return fail(cudaErrorInvalidValue);
    *count = g->nodes.size();
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
    if (!g) return fail(cudaErrorInvalidValue);
    *exec = new CUgraphExec_st{g->nodes};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (!exec) return fail(cudaErrorInvalidValue);
    // A graph's first node has no programmatic edge to work before the graph.
    if (!(object(s) && s->capturing)) flush_held();
    for (const auto& node : exec->nodes) {
        const cudaError_t e = issue(s, node);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    delete exec;
    return cudaSuccess;
}

// ---- events ------------------------------------------------------------------------------

cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    return issue(s, Work{nullptr, [e] { e->when = std::chrono::steady_clock::now(); }});
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    return take_async_error();
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
    *ms = std::chrono::duration<float, std::milli>(stop->when - start->when).count();
    return cudaSuccess;
}

// ---- errors ------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    if (g_sticky != cudaSuccess) return g_sticky;
    const cudaError_t e = g_last_error;
    g_last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    return g_sticky != cudaSuccess ? g_sticky : g_last_error;
}
cudaError_t cudaDeviceReset() {
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    flush_held();
    g_sticky = g_last_error = cudaSuccess;
    g_pending = Fault{};
    return cudaSuccess;
}

namespace {
struct ErrorText {
    cudaError_t code;
    const char* name;
    const char* text;
};
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorNotYetImplemented, "cudaErrorNotYetImplemented", "feature not yet implemented"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorEmulatorSharedMemoryRace, "cudaErrorEmulatorSharedMemoryRace", "shared-memory race"},
    {cudaErrorEmulatorDivergentBarrier, "cudaErrorEmulatorDivergentBarrier", "divergent barrier"},
    {cudaErrorEmulatorWarpSync, "cudaErrorEmulatorWarpSync", "invalid warp-synchronous operation"},
};
const ErrorText* find_error(cudaError_t e) {
    for (const ErrorText& t : kErrors)
        if (t.code == e) return &t;
    return nullptr;
}
thread_local std::string tls_error_string;
}  // namespace

const char* cudaGetErrorName(cudaError_t e) {
    const ErrorText* t = find_error(e);
    return t ? t->name : "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
    const ErrorText* t = find_error(e);
    std::lock_guard<std::recursive_mutex> lock(g_mu);
    tls_error_string = t ? t->text : "unknown error";
    if (e >= cudaErrorEmulatorSharedMemoryRace && !g_fault_text.empty()) {
        tls_error_string = g_fault_text;  // the emulator's own findings: its explanation says it all
    } else if (e != cudaSuccess && !g_fault_text.empty()) {
        // The emulator knows where the kernel went wrong: the explanation follows the GPU's words.
        tls_error_string += "; emulator: " + g_fault_text;
    }
    return tls_error_string.c_str();
}

// ---- the device --------------------------------------------------------------------------

cudaError_t cudaGetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }
cudaError_t cudaGetDeviceCount(int* n) {
    *n = 1;
    return cudaSuccess;
}
namespace {
/// The memory the emulated device reports (WBEMU_MEMORY): an H100's by default, an H200's with
/// WBEMU_MEMORY=h200, so a plan chosen by memory speed can be graded on either. Memory clock in
/// kHz and bus width in bits, as the toolkit's attributes give them.
struct MemoryIdentity {
    const char* name;
    int clock_khz;
    int bus_bits;
};
const MemoryIdentity& memory_identity() {
    static const MemoryIdentity identity = [] {
        static constexpr MemoryIdentity kH100{"H100", 2619000, 5120}, kH200{"H200", 3201000, 6144};
        const char* v = std::getenv("WBEMU_MEMORY");
        if (v == nullptr || *v == '\0' || std::strcmp(v, "h100") == 0) return kH100;
        if (std::strcmp(v, "h200") == 0) return kH200;
        std::fprintf(stderr, "WBEMU_MEMORY=%s: the emulator knows h100 (the default) and h200; unset it or pick one\n", v);
        std::exit(2);
    }();
    return identity;
}
}  // namespace

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "CPU emulator (H100 limits, %s memory)", memory_identity().name);
    p->memoryClockRate = memory_identity().clock_khz;
    p->memoryBusWidth = memory_identity().bus_bits;
    p->totalGlobalMem = std::size_t(80) << 30;
    p->sharedMemPerBlock = DeviceLimits::static_smem;
    p->sharedMemPerBlockOptin = DeviceLimits::optin_smem;
    p->sharedMemPerMultiprocessor = DeviceLimits::smem_per_sm;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = DeviceLimits::sm_count;
    p->l2CacheSize = 50 << 20;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int) {
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
        case cudaDevAttrMaxGridDimY: *v = 65535; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *v = static_cast<int>(DeviceLimits::static_smem); break;
        case cudaDevAttrWarpSize: *v = 32; break;
        case cudaDevAttrMultiProcessorCount: *v = DeviceLimits::sm_count; break;
        case cudaDevAttrMemoryClockRate: *v = memory_identity().clock_khz; break;
        case cudaDevAttrGlobalMemoryBusWidth: *v = memory_identity().bus_bits; break;
        case cudaDevAttrL2CacheSize: *v = 50 << 20; break;
        case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
        case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = static_cast<int>(DeviceLimits::smem_per_sm); break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = static_cast<int>(DeviceLimits::optin_smem); break;
        default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }
cudaError_t emu_occupancy_max_active_clusters(int* count, const cudaLaunchConfig_t* config) {
    // An H100 refuses a configuration of no blocks (measured 2026-11-27: cudaErrorInvalidValue for a
    // grid of 0 with every cluster and block size), so a kernel that asks about a launch it has not
    // sized yet sees here what it would see there.
    if (count == nullptr || config == nullptr) return fail(cudaErrorInvalidValue);
    const dim3 g = config->gridDim, b = config->blockDim;
    if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) return fail(cudaErrorInvalidValue);
    *count = DeviceLimits::sm_count / 2;
    return cudaSuccess;
}
