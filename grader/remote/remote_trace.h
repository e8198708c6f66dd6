/// @file remote_trace.h
/// @brief WORKBOOK_REMOTE_TRACE=1: both processes of a remote grading print each phase of a timed
///        batch to stderr, flushed, with a monotonic time both share, so one run shows where a batch
///        stops (which side waits, for which word and value).
#pragma once

#include <string>

namespace workbook::remote {

/// Whether WORKBOOK_REMOTE_TRACE asks for the trace (set, not empty, not "0"); read once.
bool remote_trace_on();

/// One trace line, without its newline: "remote-trace t=<seconds> side=<side> pid=<pid> <what>".
/// `seconds` is CLOCK_MONOTONIC, the same clock in both processes.
std::string remote_trace_line(double seconds, const std::string& side, long pid, const std::string& what);

/// Prints `what` as this process's trace line (side "grader" or "host") when the trace is on.
void remote_trace(const char* side, const std::string& what);

/// Seconds each phase of a timed batch may take before the batch watchdog acts:
/// WORKBOOK_REMOTE_PHASE_SECONDS when it holds a positive number, else the call timeout plus 30 s.
double batch_phase_seconds(double call_timeout, const char* asked);

}  // namespace workbook::remote
