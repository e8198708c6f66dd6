/// @file case_registry.h
/// @brief What a lesson gives the grader: named correctness cases and benchmark shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/submission.h"

namespace workbook {

/// What a failing case's first cause was; later checks never rename it.
enum class FailureCause {
    none,
    launch,  ///< a launch was refused or the entry point returned an error
    stream,  ///< work went to another stream, or the capture was broken
    kernel,  ///< the kernel ran and failed (illegal address, hang, ...)
    output,  ///< the launch was right; an output, a guard zone or an input is wrong
};

/// "launch", "stream", "kernel", "output" ("" for none): the JSON report's `cause` of a case.
inline const char* cause_name(FailureCause c) {
    switch (c) {
        case FailureCause::launch: return "launch";
        case FailureCause::stream: return "stream";
        case FailureCause::kernel: return "kernel";
        case FailureCause::output: return "output";
        default: return "";
    }
}

/// A case's result: passed, or the reason it failed (first wrong element, error, ...).
struct CaseOutcome {
    bool passed = true;
    std::string detail;
    FailureCause cause = FailureCause::none;
    static CaseOutcome pass(std::string note = {}) { return {true, std::move(note), FailureCause::none}; }
    static CaseOutcome fail(std::string why, FailureCause cause = FailureCause::output) {
        return {false, std::move(why), cause};
    }
};

/// One correctness case; `run` is called with a fresh seed for each repetition.
struct Case {
    std::string name;
    std::string what;  ///< one line: what the case tests
    int repeats = 2;
    bool large = false;  ///< skipped by --small (compute-sanitizer runs): too slow to instrument
    int64_t elements = 0;  ///< the largest tensor's span: the CPU emulator leaves out what it cannot hold
    std::string not_on_cpu;  ///< why the CPU emulator leaves this case to the GPU ("": it runs it)
    std::function<CaseOutcome(uint64_t seed, int repetition)> run;
};

/// The samples of one benchmark shape, in seconds per launch.
struct BenchSamples {
    std::vector<double> student, reference, reference_again;
};

/// One benchmark shape. `time_student`/`time_reference` return one cold sample in seconds.
struct BenchShape {
    std::string shape;  ///< "32768x4096"
    std::string dtype;  ///< "f32", "f16", "bf16"
    double bytes = 0;   ///< bytes per launch: each input read once, each output written once
    std::function<double()> time_student;
    std::function<double()> time_reference;
    /// Checks the outputs the timed student launches wrote; returns "" when right.
    std::function<std::string()> verify_student;
    /// One launch of the student's (true) or the reference's (false) call on fresh tensors, inside
    /// a cudaProfilerStart/Stop range for `./grade lessonN --profile`; returns the kernels it launched.
    std::function<int(bool student)> profile_once;
};

/// A lesson's grading plan for one student against the reference.
struct LessonPlan {
    std::vector<Case> cases;
    std::vector<BenchShape> bench;
    /// Extra gate condition (lesson 7: the chain must be faster with PDL); "" when met.
    std::function<std::string(std::vector<std::string>& table_lines)> extra_gate;
    /// The lesson's own oracle, checked before any case (lesson 10's fp64 GPU oracle); "" when right.
    std::function<std::string()> self_check;
    /// Its timing needs every launch in one process (lesson 7's chains overlap on one stream), so remote
    /// grading checks its correctness only.
    bool timing_needs_one_process = false;
};

}  // namespace workbook
