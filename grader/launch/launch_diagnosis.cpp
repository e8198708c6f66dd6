/// @file launch_diagnosis.cpp
#include "launch/launch_diagnosis.h"

namespace workbook {

std::string format_dim(const uint64_t d[3]) {
    return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

std::string explain_launch_limits(const LaunchShape& l, const LaunchLimits& lim) {
    static const char* const axis[3] = {"x", "y", "z"};
    const uint64_t threads = l.block[0] * l.block[1] * l.block[2];
    const uint64_t blocks = l.grid[0] * l.grid[1] * l.grid[2];
    if (blocks == 0)
        return "a grid of zero blocks is not a valid launch (when there is no work, return cudaSuccess without "
               "launching)";
    if (threads == 0) return "a block of zero threads is not a valid launch";
    for (int i = 0; i < 3; ++i)
        if (l.grid[i] > lim.max_grid[i])
            return std::string("gridDim.") + axis[i] + " = " + std::to_string(l.grid[i]) + " is past its limit of " +
                   std::to_string(lim.max_grid[i]) +
                   (i == 0 ? "" : " (only gridDim.x goes to 2^31 - 1): put the rows on gridDim.x, or loop over rows "
                                  "inside the kernel with a grid-stride loop");
    if (threads > lim.max_threads)
        return "a block of " + format_dim(l.block) + " = " + std::to_string(threads) + " threads is past the limit of " +
               std::to_string(lim.max_threads) +
               " threads per block: cap the block size and let each thread handle several elements";
    for (int i = 0; i < 3; ++i)
        if (l.block[i] > lim.max_block[i])
            return std::string("blockDim.") + axis[i] + " = " + std::to_string(l.block[i]) + " is past its limit of " +
                   std::to_string(lim.max_block[i]);
    if (l.shared_bytes > lim.max_shared_optin)
        return "it asks for " + std::to_string(l.shared_bytes) +
               " bytes of dynamic shared memory per block, more than the device has (" +
               std::to_string(lim.max_shared_optin) + " bytes)";
    if (l.shared_bytes > lim.max_shared_default)
        return "it asks for " + std::to_string(l.shared_bytes) +
               " bytes of dynamic shared memory per block; past " + std::to_string(lim.max_shared_default) +
               " bytes the kernel needs cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
               "bytes) first";
    return "";
}

std::string describe_failed_launch(const LaunchShape& l, const char* error_name, const char* error_text,
                                   const LaunchLimits& limits, bool rows_zero) {
    std::string out = rows_zero ? "rows = 0 must return cudaSuccess and launch nothing, but the entry point launched "
                                  "a kernel ("
                                : "a kernel launch (";
    out += std::string("grid ") + format_dim(l.grid) + ", block " + format_dim(l.block);
    if (l.shared_bytes) out += ", " + std::to_string(l.shared_bytes) + " bytes of dynamic shared memory";
    out += std::string(rows_zero ? "), which was refused with " : ") was refused with ") + error_name + " (" +
           error_text + ")";
    const std::string why = explain_launch_limits(l, limits);
    if (!why.empty()) out += ": " + why;
    return out;
}

std::string describe_wrong_stream(const LaunchShape& l, const std::string& stream_name) {
    std::string out = "a kernel (grid " + format_dim(l.grid) + ", block " + format_dim(l.block) + ") was launched on " +
                      stream_name + ", not on the `stream` argument";
    out += l.from_config ? ": set cudaLaunchConfig_t::stream = stream (a config left zeroed launches on the legacy "
                           "default stream)"
                         : ": pass `stream` as the fourth launch parameter, <<<grid, block, shared_bytes, stream>>>";
    return out;
}

std::string describe_swallowed_error(const char* error_name, const char* error_text, bool rows_zero) {
    std::string out = std::string("a launch failed with ") + error_name + " (" + error_text +
                      ") but the entry point returned cudaSuccess: return the launch's error (cudaGetLastError())";
    if (rows_zero) out += "; with rows = 0, launch nothing at all";
    return out;
}

}  // namespace workbook
