/// @file fenced_memory.cu
#include "engine/fenced_memory.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/buffer_hooks.h"
#include "engine/driver_memory.h"
#include "workbook/cuda_check.h"

namespace workbook {
namespace {

/// One fenced allocation: the reserved range, the mapped part inside it, and its physical memory.
struct Fence {
    CUdeviceptr reserved = 0;
    std::size_t reserved_bytes = 0;
    CUdeviceptr mapped = 0;
    std::size_t mapped_bytes = 0;
    CUmemGenericAllocationHandle handle = 0;
};

struct State {
    std::mutex lock;
    DriverMemory driver;
    CUmemAllocationProp prop{};
    std::size_t granule = 0;
    std::unordered_map<void*, Fence> fences;
};

State& state() {
    static State s;
    return s;
}

/// Throws CudaError for a failed driver call, named like WB_CUDA_CHECK names a runtime one.
void check(CUresult r, const char* call) {
    if (r == CUDA_SUCCESS) return;
    const cudaError_t code = r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorUnknown;
    throw CudaError(code, std::string(__FILE__) + ": " + call + " failed: CUresult " + std::to_string(r) + " (" +
                              cudaGetErrorString(code) + ")");
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

/// Frees what a fence holds, in the reverse order of allocate_fenced; errors are ignored (a device that
/// faulted keeps its sticky error, and the memory must still go back).
void tear_down(const DriverMemory& d, const Fence& f) {
    if (f.mapped_bytes) d.unmap(f.mapped, f.mapped_bytes);
    if (f.handle) d.release(f.handle);
    if (f.reserved_bytes) d.address_free(f.reserved, f.reserved_bytes);
}

void* hook_allocate(std::size_t bytes, bool device) {
    return device ? allocate_fenced(bytes) : plain_host_allocation(bytes);
}

void hook_release(void* p, bool device) {
    if (!device) std::free(p);
    else if (!release_fenced(p)) cudaFree(p);
}

}  // namespace

void install_fenced_memory() {
    // WORKBOOK_FENCED_MEMORY=0: plain cudaMalloc, to measure what the mappings cost against it.
    if (const char* v = std::getenv("WORKBOOK_FENCED_MEMORY"); v && std::string(v) == "0") return;
    State& s = state();
    DriverMemory& d = s.driver;
    int device = 0;
    WB_CUDA_CHECK(cudaGetDevice(&device));
    const bool found = find_driver_memory(d) == nullptr;
    s.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    s.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    s.prop.location.id = device;
    if (!found || d.granularity(&s.granule, &s.prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
        s.granule == 0) {
        std::fprintf(stderr, "note: this driver has no virtual memory management; tensors come from cudaMalloc, "
                             "so a read far past a tensor is not caught\n");
        return;
    }
    buffer_hooks().allocate = hook_allocate;
    buffer_hooks().release = hook_release;
}

void* allocate_fenced(std::size_t bytes) {
    State& s = state();
    const DriverMemory& d = s.driver;
    Fence f;
    f.mapped_bytes = round_up(bytes ? bytes : 1, s.granule);
    f.reserved_bytes = f.mapped_bytes + 2 * s.granule;  // an unmapped granule on each side
    try {
        check(d.reserve(&f.reserved, f.reserved_bytes, s.granule, 0, 0), "cuMemAddressReserve");
        check(d.create(&f.handle, f.mapped_bytes, &s.prop, 0), "cuMemCreate");
        f.mapped = f.reserved + s.granule;
        check(d.map(f.mapped, f.mapped_bytes, 0, f.handle, 0), "cuMemMap");
        CUmemAccessDesc access{};
        access.location = s.prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        check(d.set_access(f.mapped, f.mapped_bytes, &access, 1), "cuMemSetAccess");
    } catch (...) {
        if (!f.mapped) f.mapped_bytes = 0;
        tear_down(d, f);
        throw;
    }
    // The buffer ends as close to the mapping's end as a 256-byte aligned start allows.
    const CUdeviceptr end = f.mapped + f.mapped_bytes;
    void* p = reinterpret_cast<void*>((end - bytes) / 256 * 256);
    std::lock_guard<std::mutex> hold(s.lock);
    s.fences.emplace(p, f);
    return p;
}

bool release_fenced(void* p) {
    State& s = state();
    Fence f;
    {
        std::lock_guard<std::mutex> hold(s.lock);
        auto it = s.fences.find(p);
        if (it == s.fences.end()) return false;
        f = it->second;
        s.fences.erase(it);
    }
    // cudaFree waits for the device before it frees; unmapping does not, so wait here as it would.
    cudaDeviceSynchronize();
    tear_down(s.driver, f);
    return true;
}

}  // namespace workbook
