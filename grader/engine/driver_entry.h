/// @file driver_entry.h
/// @brief A CUDA driver call found through the runtime, so the grader needs no link to libcuda and
///        still starts (and says what is missing) on a machine whose driver lacks the call.
#pragma once

#include <cuda_runtime.h>

namespace workbook {

/// Sets `fn` to the driver's `name` (its CUDA 12 version: the v2 stream memory operations, on by default on
/// every platform); false, `fn` untouched, where there is none.
template <typename F>
bool find_driver_entry(const char* name, F& fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess || !p ||
        found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();  // a failed look-up leaves no error behind for the next runtime call
        return false;
    }
    fn = reinterpret_cast<F>(p);
    return true;
}

}  // namespace workbook
