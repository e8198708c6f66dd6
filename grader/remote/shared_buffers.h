/// @file shared_buffers.h
/// @brief Memory that the grader and the submission's process both map: device memory exported
///        as a file descriptor (CUDA's virtual memory management), host memory as a memfd. The
///        grader owns every buffer; the submission's process only ever maps what it is sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "remote/remote_channel.h"

namespace workbook::remote {

/// Grader side: allocates shareable buffers, sends each to every attached channel, and turns
/// pointers into (buffer, offset) for the other process.
class SharedBuffers {
public:
    static SharedBuffers& instance();

    /// Every later allocation and release is announced on `channel`.
    void attach(Channel* channel) { channels_.push_back(channel); }
    void* allocate(std::size_t bytes, bool device);
    void release(void* p, bool device);
    /// True with the buffer's id and the offset when `p` lies in a shared buffer (or one past its end).
    bool locate(const void* p, uint64_t& id, uint64_t& offset) const;

private:
    struct Buffer {
        uint64_t id;
        std::size_t size;  ///< as mapped (device: rounded up to the allocation granularity)
        bool device;
        unsigned long long handle;  ///< device only: the allocation's CUmemGenericAllocationHandle
    };
    std::map<uintptr_t, Buffer> buffers_;  ///< by base address
    std::vector<Channel*> channels_;
    uint64_t next_id_ = 1;
};

/// Submission side: the buffers the grader sent, mapped into this process.
class MappedBuffers {
public:
    ~MappedBuffers();
    /// Maps buffer `id` from the descriptor `fd` (taken over and closed).
    void map(uint64_t id, std::size_t size, bool device, int fd);
    void unmap(uint64_t id);
    /// This process's address of (id, offset); throws ChannelError for an unknown buffer.
    void* resolve(uint64_t id, uint64_t offset) const;

private:
    struct Mapping {
        void* base;
        std::size_t size;
        bool device;
        unsigned long long handle;
    };
    std::map<uint64_t, Mapping> mappings_;
};

/// Installs the buffer hooks (buffer_hooks.h) that allocate through SharedBuffers.
void install_shared_buffer_hooks();

}  // namespace workbook::remote
