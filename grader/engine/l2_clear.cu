/// @file l2_clear.cu
/// @brief clear_l2: what "L2 cleared before every sample" means for the grader's timings.
#include "engine/l2_clear.h"

#include <cstddef>

#include "workbook/cuda_check.h"

namespace workbook {
namespace {

/// The buffer the clear writes, twice the size of L2; made on the first call. Its cudaMalloc is
/// made here, before any stream is held (remote timing queues the write under a hold).
void* l2_clear_buffer(size_t& bytes) {
    static void* buffer = nullptr;
    static size_t size = 0;
    if (!buffer) {
        int device = 0;
        WB_CUDA_CHECK(cudaGetDevice(&device));
        int l2 = 0;
        WB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
        size = 2 * static_cast<size_t>(l2 > 0 ? l2 : (64 << 20));
        WB_CUDA_CHECK(cudaMalloc(&buffer, size));
    }
    bytes = size;
    return buffer;
}

}  // namespace

void reset_l2_priorities() {
    size_t bytes = 0;
    (void)l2_clear_buffer(bytes);  // made now: the write that follows may be queued under a hold
    // Lines a kernel loaded under `L2::evict_last` survive a write of any size: a submission
    // could keep its own input in L2 from one sample to the next, and a reference that reads
    // under that priority (lesson 5's) would speed up whatever is timed after it. They are
    // reset to normal first (the previous sample has finished), so the write evicts them.
    // A device without the feature has nothing to reset; its error is not left pending.
    if (cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
}

void clear_l2(cudaStream_t stream) {
    reset_l2_priorities();
    write_l2_clear(stream);
}

void write_l2_clear(cudaStream_t stream) {
    size_t bytes = 0;
    void* buffer = l2_clear_buffer(bytes);
    WB_CUDA_CHECK(cudaMemsetAsync(buffer, 0x5a, bytes, stream));
}

}  // namespace workbook
