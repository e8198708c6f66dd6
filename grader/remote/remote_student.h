/// @file remote_student.h
/// @brief Grader side of remote grading: the submission's entry points as proxies that run the
///        call in the process holding the submission's code, on buffers this process owns.
///
/// Why: code in the grading process can reach the grading process's state, including the verdict it
/// is about to write. Under remote grading the grader holds no submission code at all: it fills the
/// inputs, sends each call, checks every output itself and times the calls by its own clock.
#pragma once

#include <memory>
#include <string>

#include "remote/remote_channel.h"
#include "engine/submission.h"

namespace workbook::remote {

/// The two processes a remote grading talks to.
enum Side { student_side = 0, reference_side = 1 };

/// Connects `side` to the host process at the other end of `channel_fd`, waits for it to say that
/// the library loaded, and returns a Submission whose table forwards every call to it. Throws
/// std::runtime_error with the host's own message when it could not load the library.
std::unique_ptr<Submission> connect(Side side, int channel_fd, int lesson, const std::string& label, double seconds);

/// Starts this executable as the host of `library` (the reference, trusted) on a new socket pair
/// and connects it as `side`.
std::unique_ptr<Submission> start_host(Side side, const std::string& library, int lesson, double seconds);

/// Installs the buffer hooks for remote grading: shared allocations and batched, wall-clock-timed calls.
void install_remote_hooks();

/// True once a host process ended, hung, or broke the protocol (not when it reported a failed kernel).
bool host_lost();

/// Seconds a call may take before the other process is declared hung.
void set_call_timeout(double seconds);

}  // namespace workbook::remote
