/// @file run_report.h
/// @brief Everything one grading run found, and how it is printed and written as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace workbook {

/// Exit codes of the grader, documented in README.md.
enum ExitCode { kPass = 0, kFailCorrectness = 1, kFailGate = 2, kFailBuild = 3, kNoGpu = 4, kUsage = 64 };

struct CaseResult {
    std::string name, what;
    bool passed = false;
    bool skipped = false;
    std::string detail;   ///< the failure, with the repetition it happened in
    std::string message;  ///< the failure alone: identical messages are grouped when printed
    std::string cause;    ///< launch | stream | kernel | output ("" when passed)
};

struct BenchResult {
    /// Why the shape failed, when verdict is "wrong", "error" or "impossible".
    std::string problem;
    std::string shape, dtype;
    double student_gbps = 0, reference_gbps = 0, ratio = 0, copy_fraction = 0, noise = 0;
    /// A copy of the same bytes timed the same way, and the student's fraction of it.
    double size_copy_gbps = 0, size_copy_fraction = 0;
    /// Bytes one launch moves (each input read once, each output written once).
    double bytes = 0;
    std::string verdict;
};

struct RunReport {
    int lesson = 0;
    std::string source;
    std::string verdict = "pass";  ///< pass | fail-correctness | fail-gate | fail-build | no-gpu
    std::string reason;
    std::vector<CaseResult> cases;
    std::vector<BenchResult> bench;
    std::vector<std::string> gate_notes;  ///< lines printed under the table (measurements, not verdicts)
    std::string extra_gate_problem;       ///< the lesson's own gate condition, when it failed (lesson 7: PDL)
    bool still_stub = false;              ///< the failures say the file is still the shipped stub
    bool emulated = false;                ///< graded on the CPU emulator: correctness only, no gate
    bool remote = false;                  ///< the submission ran in its own process (remote grading)
    bool host_lost = false;               ///< remote grading: that process ended, hung or broke the protocol
    std::string gpu, driver, cuda;
    int sm = 0;
    double copy_gbps = 0, gate_fraction = 0;
    uint64_t seed = 0;
    /// The GPU's clocks while the timed samples ran (NVML, every 10 ms): median, lowest, highest, in MHz.
    int clock_samples = 0;
    double sm_clock_mhz = 0, sm_clock_min = 0, sm_clock_max = 0;
    double mem_clock_mhz = 0, mem_clock_min = 0, mem_clock_max = 0;
    std::string clock_note;    ///< why the clocks were not measured ("" when they were, or nothing was timed)
    std::string remote_clock;  ///< remote grading: "stream" or "wall" (how the batches were timed)
    double remote_gate_us = 0; ///< "stream": the gate's own time taken off every timed group, microseconds
};

/// Writes the report as JSON to `path`; returns false (and says why on stderr) if it cannot.
bool write_json(const RunReport& report, const std::string& path);

/// Prints the benchmark table and the gate's verdict.
void print_bench_table(const RunReport& report);

}  // namespace workbook
