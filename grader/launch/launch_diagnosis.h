/// @file launch_diagnosis.h
/// @brief Plain-language reasons for a launch that failed or went to the wrong place.
///
/// Pure functions of what a launch asked for and of the device's limits, so every message
/// class is tested on the CPU; launch_guard.cu feeds them what the launch recorder saw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace workbook {

/// What one kernel launch asked for.
struct LaunchShape {
    uint64_t grid[3] = {1, 1, 1};
    uint64_t block[3] = {1, 1, 1};
    std::size_t shared_bytes = 0;  ///< dynamic shared memory per block
    bool from_config = false;      ///< launched through cudaLaunchKernelEx (a cudaLaunchConfig_t)
};

/// The device's launch limits (cudaDeviceProp's fields of the same meaning).
struct LaunchLimits {
    uint64_t max_grid[3] = {2147483647u, 65535u, 65535u};
    uint64_t max_block[3] = {1024u, 1024u, 64u};
    uint64_t max_threads = 1024u;
    std::size_t max_shared_default = 48 * 1024;  ///< without cudaFuncAttributeMaxDynamicSharedMemorySize
    std::size_t max_shared_optin = 227 * 1024;
};

/// "(1, 70001, 1)".
std::string format_dim(const uint64_t d[3]);

/// Which limit the launch broke, in words, with what to do; "" when it is within every limit.
std::string explain_launch_limits(const LaunchShape& launch, const LaunchLimits& limits);

/// The message for a launch that the runtime refused with `error_name` ("cudaErrorInvalidConfiguration").
/// `rows_zero`: the case has rows = 0, where the entry point must launch nothing at all.
std::string describe_failed_launch(const LaunchShape& launch, const char* error_name, const char* error_text,
                                   const LaunchLimits& limits, bool rows_zero);

/// The message for a launch that went to `stream_name` ("the legacy default stream (0)") instead of
/// the `stream` argument.
std::string describe_wrong_stream(const LaunchShape& launch, const std::string& stream_name);

/// The message for a launch error that was pending after the entry point returned cudaSuccess,
/// when the launch itself was not seen (a launch path the recorder does not cover).
std::string describe_swallowed_error(const char* error_name, const char* error_text, bool rows_zero);

}  // namespace workbook
