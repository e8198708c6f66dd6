/// @file internal.h
/// @brief The emulator's state shared by its translation units (not seen by kernels).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_runtime.h"

namespace emu {

/// A fault found while a kernel ran: the error the stream reports and the full explanation.
struct Fault {
    cudaError_t code = cudaSuccess;
    std::string text;
};

/// Records `fault` as the launch's (the first one wins) and stops the calling fiber for good.
[[noreturn]] void raise_fault(cudaError_t code, const std::string& text);

/// "file.cu:42" for a code address in a submission (via addr2line), or "" when unknown.
std::string source_line(const void* pc);

/// Stops the calling fiber with an illegal-address fault naming `a`, the nearest device buffer and the
/// kernel's line (`pc`: a return address or one byte past the faulting instruction); `bytes` 0: unknown.
[[noreturn]] void report_illegal_address(uintptr_t a, std::size_t bytes, bool write, const void* pc);

/// "block (3,0,0) thread (31,0,0)" of the running CUDA thread, or "" outside a kernel.
std::string where_now();

/// Called by the hooks on every instrumented access (see memory.cpp).
void check_access(const void* addr, std::size_t bytes, bool write, bool aligned_access, const void* pc,
                  bool atomic = false);

/// Called by the hooks on a volatile access: never a race, and a read lets the other threads run.
void volatile_access(const void* addr, std::size_t bytes, bool write, bool aligned_access, const void* pc);

/// Lets the other threads of the running unit go first (a spin on a volatile flag, __nanosleep).
void yield_thread();

/// Called by the compiler's alignment check on a load (kind 0), store (1) or copy (2) of a whole
/// value of a type that needs `alignment` bytes (a vector or an alignas struct): a misaligned
/// address, as on the GPU.
void check_typed_alignment(const void* addr, std::size_t alignment, const char* type, int kind, const void* pc);

/// Device heap: allocations checked by check_access.
void* device_alloc(std::size_t bytes);
bool device_free(void* p);
/// True when [p, p+bytes) lies in one live device allocation (or outside the device heap).
bool device_range_ok(const void* p, std::size_t bytes);

/// The runtime side of a kernel fault: set by the launch, read by the stream calls.
void set_pending_fault(const Fault& f);

/// The emulated device's limits (H100-like, so kernels pick the same configurations).
struct DeviceLimits {
    static constexpr int sm_count = 132;
    static constexpr int max_threads = 1024;
    static constexpr unsigned max_grid_x = 2147483647u, max_grid_yz = 65535u;
    static constexpr std::size_t static_smem = 48 * 1024;
    static constexpr std::size_t optin_smem = 227 * 1024;
    static constexpr std::size_t smem_per_sm = 228 * 1024;
    static constexpr int max_cluster = 8, max_cluster_nonportable = 16;
};

/// A kernel launch held back so that a grid launched after it with programmatic stream
/// serialization can start first: it runs once, when that grid first waits on it
/// (cudaGridDependencySynchronize), after that grid if it never waits, or when anything else
/// needs the stream.
class HeldKernel {
public:
    explicit HeldKernel(std::function<void()> run) : run_(std::move(run)) {}
    /// Runs the kernel unless it ran already; on the thread that needs it.
    void complete() {
        std::call_once(once_, [this] {
            run_();
            done_.store(true, std::memory_order_release);
        });
    }
    bool done() const { return done_.load(std::memory_order_acquire); }

private:
    std::function<void()> run_;
    std::once_flag once_;
    std::atomic<bool> done_{false};
};

/// The GPU's launch checks, in the GPU's order; cudaSuccess when the launch may run, else the
/// error and, in `why`, what is wrong.
cudaError_t validate(const LaunchSpec& s, std::string& why);

/// Runs a validated launch now (blocks spread over the CPU's cores); returns its fault, if any.
/// `prerequisite`: the grid this one depends on through programmatic dependent launch, not run yet.
Fault execute(const LaunchSpec& spec, const std::function<void()>& body, const std::shared_ptr<HeldKernel>& prerequisite);

}  // namespace emu
