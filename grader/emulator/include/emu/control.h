/// @file control.h
/// @brief Settings of the emulator that a grader (not a kernel) makes, and what it asks after a launch.
#pragma once

#include <string>
#include <cstdint>

namespace emu {

/// A launch using more than this many seconds of CPU time on every core is stopped and reported as a
/// hang (cudaErrorLaunchTimeout). CPU time, not wall time: other work on the machine slows a kernel
/// down without making it a hang.
void set_watchdog_seconds(double seconds);

/// The first read of shared memory that no thread of its block had written, in the launches since
/// the last call ("read of shared memory never written: partials[5] at k.cu:40 by block (0,0,0)
/// warp 0 lane 5 ..."), or "" when there was none. The kernel goes on (the value read is the NaN
/// poison), so its outputs can still be checked; one such read is kept until this call takes it.
std::string take_unwritten_shared_read();

/// Seeds the scheduler: the order each launch takes its blocks in and the order ready warps run
/// in are drawn from this seed and a launch counter (reset here), so a grade run again with the
/// same seed schedules the same way, and two launches on the same inputs do not.
void set_schedule_seed(uint64_t seed);

}  // namespace emu
