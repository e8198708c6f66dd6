/// @file shared_buffers.cu
#include "remote/shared_buffers.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/buffer_hooks.h"
#include "engine/driver_memory.h"
#include "workbook/cuda_check.h"

namespace workbook::remote {
namespace {

/// The driver's virtual-memory calls, found once; a driver without them cannot share buffers.
const DriverMemory& driver() {
    static const DriverMemory d = [] {
        DriverMemory r;
        WB_CUDA_CHECK(cudaFree(nullptr));  // the runtime's context first
        if (const char* missing = find_driver_memory(r))
            throw std::runtime_error(std::string("the CUDA driver has no ") + missing +
                                     ", which remote grading needs (a driver for CUDA 12 or newer)");
        return r;
    }();
    return d;
}

void drv(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed with CUresult " + std::to_string(r));
}

CUmemAllocationProp device_prop() {
    int device = 0;
    WB_CUDA_CHECK(cudaGetDevice(&device));
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

/// Reserves an address range for `handle` and maps it read-write for this device.
CUdeviceptr map_device(const DriverMemory& d, CUmemGenericAllocationHandle handle, std::size_t size) {
    CUdeviceptr ptr = 0;
    drv(d.reserve(&ptr, size, 0, 0, 0), "cuMemAddressReserve");
    drv(d.map(ptr, size, 0, handle, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location = device_prop().location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    drv(d.set_access(ptr, size, &access, 1), "cuMemSetAccess");
    return ptr;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

SharedBuffers& SharedBuffers::instance() {
    static SharedBuffers buffers;
    return buffers;
}

void* SharedBuffers::allocate(std::size_t bytes, bool device) {
    Buffer b{next_id_++, 0, device, 0};
    void* base = nullptr;
    int fd = -1;
    if (device) {
        const DriverMemory& d = driver();
        CUmemAllocationProp prop = device_prop();
        std::size_t gran = 0;
        drv(d.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
        b.size = round_up(bytes ? bytes : 1, gran);
        CUmemGenericAllocationHandle handle = 0;
        const CUresult made = d.create(&handle, b.size, &prop, 0);
        if (made == CUDA_ERROR_OUT_OF_MEMORY) throw CudaError(cudaErrorMemoryAllocation, "out of device memory");
        drv(made, "cuMemCreate");
        b.handle = handle;
        base = reinterpret_cast<void*>(map_device(d, handle, b.size));
        drv(d.export_handle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
    } else {
        b.size = round_up(bytes ? bytes : 1, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
        fd = memfd_create("workbook-buffer", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(b.size)) != 0)
            throw std::runtime_error(std::string("cannot make shared host memory: ") + std::strerror(errno));
        base = mmap(nullptr, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) throw std::runtime_error(std::string("mmap failed: ") + std::strerror(errno));
    }
    Writer w;
    w.put<uint64_t>(b.id);
    w.put<uint64_t>(b.size);
    w.put<uint8_t>(device);
    for (Channel* c : channels_) c->send(Kind::share, w.bytes(), fd);
    close(fd);
    buffers_[reinterpret_cast<uintptr_t>(base)] = b;
    return base;
}

void SharedBuffers::release(void* p, bool) {
    auto it = buffers_.find(reinterpret_cast<uintptr_t>(p));
    if (it == buffers_.end()) return;
    const Buffer b = it->second;
    buffers_.erase(it);
    Writer w;
    w.put<uint64_t>(b.id);
    for (Channel* c : channels_) {
        try {
            c->send(Kind::release, w.bytes());
        } catch (const ChannelError&) {
            // The other process is gone; its mappings went with it.
        }
    }
    if (b.device) {
        const DriverMemory& d = driver();
        const auto ptr = reinterpret_cast<CUdeviceptr>(p);
        cudaDeviceSynchronize();  // the grader's own work on the buffer ends before it is unmapped
        d.unmap(ptr, b.size);
        d.address_free(ptr, b.size);
        d.release(b.handle);
    } else {
        munmap(p, b.size);
    }
}

bool SharedBuffers::locate(const void* p, uint64_t& id, uint64_t& offset) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = buffers_.upper_bound(a);
    if (it == buffers_.begin()) return false;
    --it;
    if (a > it->first + it->second.size) return false;
    id = it->second.id;
    offset = a - it->first;
    return true;
}

MappedBuffers::~MappedBuffers() {
    while (!mappings_.empty()) unmap(mappings_.begin()->first);
}

void MappedBuffers::map(uint64_t id, std::size_t size, bool device, int fd) {
    if (fd < 0) throw ChannelError("a shared buffer arrived without its descriptor");
    Mapping m{nullptr, size, device, 0};
    if (device) {
        const DriverMemory& d = driver();
        CUmemGenericAllocationHandle handle = 0;
        drv(d.import_handle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            "cuMemImportFromShareableHandle");
        close(fd);
        m.handle = handle;
        m.base = reinterpret_cast<void*>(map_device(d, handle, size));
    } else {
        m.base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m.base == MAP_FAILED) throw std::runtime_error(std::string("mmap failed: ") + std::strerror(errno));
    }
    mappings_[id] = m;
}

void MappedBuffers::unmap(uint64_t id) {
    auto it = mappings_.find(id);
    if (it == mappings_.end()) return;
    const Mapping m = it->second;
    mappings_.erase(it);
    if (m.device) {
        const DriverMemory& d = driver();
        cudaDeviceSynchronize();
        const auto ptr = reinterpret_cast<CUdeviceptr>(m.base);
        d.unmap(ptr, m.size);
        d.address_free(ptr, m.size);
        d.release(m.handle);
    } else {
        munmap(m.base, m.size);
    }
}

void* MappedBuffers::resolve(uint64_t id, uint64_t offset) const {
    auto it = mappings_.find(id);
    if (it == mappings_.end() || offset > it->second.size)
        throw ChannelError("a call named a buffer this process was never sent");
    return static_cast<unsigned char*>(it->second.base) + offset;
}

void install_shared_buffer_hooks() {
    BufferHooks& h = buffer_hooks();
    h.allocate = [](std::size_t bytes, bool device) { return SharedBuffers::instance().allocate(bytes, device); };
    h.release = [](void* p, bool device) { SharedBuffers::instance().release(p, device); };
}

}  // namespace workbook::remote
