/// @file control.h
/// @brief Settings of the emulator that a grader (not a kernel) makes, and what it asks after a launch.
#pragma once

#include <string>

namespace emu {

/// A launch running longer than this is stopped and reported as a hang (cudaErrorLaunchTimeout).
void set_watchdog_seconds(double seconds);

/// The first read of shared memory that no thread of its block had written, in the launches since
/// the last call ("read of shared memory never written: partials[5] at k.cu:40 by block (0,0,0)
/// warp 0 lane 5 ..."), or "" when there was none. The kernel goes on (the value read is the NaN
/// poison), so its outputs can still be checked; one such read is kept until this call takes it.
std::string take_unwritten_shared_read();

}  // namespace emu
