/// @file control.h
/// @brief Settings of the emulator that a grader (not a kernel) makes.
#pragma once

namespace emu {

/// A launch running longer than this is stopped and reported as a hang (cudaErrorLaunchTimeout).
void set_watchdog_seconds(double seconds);

}  // namespace emu
