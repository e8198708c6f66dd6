/// @file fenced_memory.h
/// @brief Device memory that ends next to an unmapped address range, so that running off the end of a
///        tensor faults on the GPU as it does on the emulator.
///
/// cudaMalloc packs allocations together: a kernel that reads a few kilobytes past its weight lands in
/// another buffer and goes on, its result unchanged whenever it never uses what it read. The grader's
/// one-process GPU runs take every tensor from here instead: each lies at the end of its own mapping,
/// within 256 bytes of it, and a reserved but unmapped granule follows (and precedes) the mapping, so an
/// access that passes the tensor's trailing guard zone is an illegal address (cudaErrorIllegalAddress).
#pragma once

#include <cstddef>

namespace workbook {

/// Makes allocate_device / release_device (engine/buffer_hooks.h) hand out fenced memory in this
/// process. Falls back to cudaMalloc, and says so on stderr, where the driver has no virtual memory
/// management, and leaves cudaMalloc in place when WORKBOOK_FENCED_MEMORY=0 (to compare the two).
/// Not for remote grading, whose buffers are shared with another process.
void install_fenced_memory();

/// `bytes` of device memory whose end lies within 256 bytes of an unmapped range; 256-byte aligned.
/// Throws CudaError (cudaErrorMemoryAllocation when the device is out of memory).
void* allocate_fenced(std::size_t bytes);

/// Frees memory from allocate_fenced; false when `p` did not come from it.
bool release_fenced(void* p);

}  // namespace workbook
