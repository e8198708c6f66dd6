/// @file check_grid.h
/// @brief The launch shape of the grader's own element-wise check kernels (grid-stride loops).
#pragma once

#include <cstdint>

namespace workbook {

/// Threads per block of a check kernel.
inline constexpr int kCheckThreads = 256;

/// A grid that covers n items with a grid-stride loop and never exceeds the x limit.
inline unsigned check_grid_for(int64_t n) {
    const int64_t blocks = (n + kCheckThreads - 1) / kCheckThreads;
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

}  // namespace workbook
