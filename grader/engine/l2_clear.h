/// @file l2_clear.h
/// @brief The cold start of every timed sample: nothing a previous launch read is left in L2.
#pragma once

#include <cuda_runtime.h>

namespace workbook {

/// Resets the L2 lines held under an evict-last priority to normal (a write does not evict
/// them), then writes a buffer twice the size of L2 on `stream`; used before every timed sample.
void clear_l2(cudaStream_t stream);

/// clear_l2 in two parts, for a stream that cannot be waited for between them (remote timing holds
/// its stream until a whole batch is queued): the reset of evict-last lines, which waits for the
/// context's work, then the write, which is only queued on `stream`.
void reset_l2_priorities();
void write_l2_clear(cudaStream_t stream);

}  // namespace workbook
