/// @file case_names.h
/// @brief `--list-cases` for both graders (wb-grader and the emulator's wb-grader-emu).
#pragma once
#include <string>

namespace workbook {

/// Prints the name of every case of `lesson`'s plan, one a line, built with the default options
/// for the libraries at `student` and `reference` (empty: a GPU lesson's plan names the student
/// for its timing). Runs no case and sets up no device. Returns the exit code: kPass, kUsage for a
/// lesson this build has no plan for, kFailBuild when a library does not load or the plan throws
/// (the message, prefixed with `program`, on stderr).
int print_case_names(const char* program, int lesson, const std::string& student, const std::string& reference);

}  // namespace workbook
