/// @file submission_host.h
/// @brief The other side of remote grading: the process that holds a submission's code and runs
///        the calls the grader sends, on the buffers it shares (`wb-grader --serve FD`).
#pragma once

#include <string>

namespace workbook::remote {

/// Loads `library` for `lesson`, says whether that worked on channel `fd`, then runs calls until
/// the grader closes the channel. Returns the process's exit code.
int serve(int fd, int lesson, const std::string& library);

}  // namespace workbook::remote
