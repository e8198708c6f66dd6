/// @file l2_clear.h
/// @brief The cold start of every timed sample: nothing a previous launch read is left in L2.
#pragma once

#include <cuda_runtime.h>

namespace workbook {

/// Resets the L2 lines held under an evict-last priority to normal (a write does not evict
/// them), then writes a buffer twice the size of L2 on `stream`; used before every timed sample.
void clear_l2(cudaStream_t stream);

}  // namespace workbook
