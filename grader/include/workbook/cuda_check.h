/**
 * @file cuda_check.h
 * @brief The one error check used for every CUDA runtime call in the grader.
 */
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace workbook {

/// A CUDA call failed; what() names the file, line, call text and error.
class CudaError : public std::runtime_error {
public:
    CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
    cudaError_t code() const { return code_; }

private:
    cudaError_t code_;
};

/// Throws CudaError when `code` is not cudaSuccess. Use through WB_CUDA_CHECK.
inline void cuda_check(cudaError_t code, const char* call, const char* file, int line) {
    if (code == cudaSuccess) return;
    throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                              cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

}  // namespace workbook

/// Checks a CUDA runtime call; on failure throws workbook::CudaError with file, line, call and error name.
#define WB_CUDA_CHECK(call) ::workbook::cuda_check((call), #call, __FILE__, __LINE__)
