/// @file main.cpp
/// @brief wb-grader: grades one compiled submission of one lesson against the reference.
///
/// Normally started by ./grade, which builds the submission first. Prints one line per case,
/// then the benchmark table and the gate's verdict, and exits with the documented code.
#include <algorithm>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_runner.h"
#ifdef WORKBOOK_HAVE_LESSON_BACKWARD
#endif
#include "engine/correctness_runner.h"
#include "report/failure_summary.h"
#include "bench/gate_reason.h"
#include "engine/gpu_checks.h"
#include "engine/launch_guard.h"
#include "engine/lesson_registry.h"
#include "app/case_names.h"
#include "app/option_reader.h"
#include "engine/fenced_memory.h"
#include "remote/remote_student.h"
#include "report/run_report.h"
#include "remote/submission_host.h"

namespace {

using namespace workbook;

struct Args {
    int lesson = 0;
    std::string student, reference, source_name, json, filter;
    std::string profile_side, profile_shape, profile_info;  ///< --profile-side student|reference: profile mode
    uint64_t seed = 0;
    bool seed_given = false, bench = true, full_bench = false, small = false, untouched_stub = false;
    bool fail_fast = false;   ///< --fail-fast: stop at the first failing case
    bool list_cases = false;  ///< --list-cases: print the plan's case names and run nothing
    int samples = 15;
    double watchdog = 30;
    int serve_fd = -1;   ///< --serve: this process hosts the submission for a remote grading
    int remote_fd = -1;  ///< --remote-student: the submission runs in the process at this channel
};

const char* kUsageText =
    "usage: wb-grader --lesson N --student LIB.so [--reference LIB.so] [--source-name NAME]\n"
    "                 [--seed S] [--json FILE] [--no-bench] [--full-bench] [--samples N]\n"
    "                 [--cases TEXT[,=NAME...]] [--small] [--watchdog SECONDS] [--untouched-stub] [--fail-fast]\n"
    "       wb-grader --lesson N --student LIB.so --reference LIB.so --profile-side student|reference\n"
    "                 [--profile-shape SHAPE[/DTYPE]] --profile-info FILE   (one launch, for Nsight Compute)\n"
    "       wb-grader --lesson N --remote-student FD [--reference LIB.so] [options above]\n"
    "                 (the submission runs in the process at channel FD, started with --serve)\n"
    "       wb-grader --serve FD --lesson N --student LIB.so   (hosts a submission for a remote grading)\n"
    "       wb-grader --list-cases --lesson N --student LIB.so [--reference LIB.so]\n"
    "                 (prints the name of every case of the lesson, one a line; runs nothing, needs no GPU)\n"
    "Normally run through ./grade, which builds the libraries first.\n";

bool parse(int argc, char** argv, Args& a, std::string& error) {
    OptionReader options(argc, argv);
    while (options.next()) {
        const std::string& arg = options.arg();
        auto value = [&](const char* what) { return options.value(what, error); };
        const char* v = nullptr;
        if (arg == "--lesson") { if (!(v = value("a lesson number"))) return false; a.lesson = std::atoi(v); }
        else if (arg == "--student") { if (!(v = value("a path"))) return false; a.student = v; }
        else if (arg == "--reference") { if (!(v = value("a path"))) return false; a.reference = v; }
        else if (arg == "--source-name") { if (!(v = value("a name"))) return false; a.source_name = v; }
        else if (arg == "--json") { if (!(v = value("a file"))) return false; a.json = v; }
        else if (arg == "--cases") { if (!(v = value("substrings, comma-separated"))) return false; a.filter = v; }
        else if (arg == "--seed") { if (!options.seed(a.seed, error)) return false; a.seed_given = true; }
        else if (arg == "--samples") { if (!(v = value("a count"))) return false; a.samples = std::max(3, std::atoi(v)); }
        else if (arg == "--watchdog") { if (!(v = value("seconds"))) return false; a.watchdog = std::atof(v); }
        else if (arg == "--serve") { if (!(v = value("a descriptor"))) return false; a.serve_fd = std::atoi(v); }
        else if (arg == "--remote-student") { if (!(v = value("a descriptor"))) return false; a.remote_fd = std::atoi(v); }
        else if (arg == "--no-bench") a.bench = false;
        else if (arg == "--full-bench") a.full_bench = true;
        else if (arg == "--small") a.small = true;
        else if (arg == "--fail-fast") a.fail_fast = true;
        else if (arg == "--untouched-stub") a.untouched_stub = true;
        else if (arg == "--list-cases") a.list_cases = true;
        else if (arg == "--profile-side") { if (!(v = value("student or reference"))) return false; a.profile_side = v; }
        else if (arg == "--profile-shape") { if (!(v = value("a shape"))) return false; a.profile_shape = v; }
        else if (arg == "--profile-info") { if (!(v = value("a file"))) return false; a.profile_info = v; }
        else if (arg == "--help" || arg == "-h") { std::cout << kUsageText; std::exit(0); }
        else { error = "unknown option " + arg; return false; }
    }
    if (a.lesson == 0) { error = "--lesson is required"; return false; }
    if (a.list_cases) {
        if (a.remote_fd >= 0 || a.serve_fd >= 0 || !a.profile_side.empty()) {
            error = "--list-cases takes --lesson, --student and --reference only";
            return false;
        }
        if (a.student.empty()) { error = "--student is required"; return false; }
        return true;
    }
    if (!a.profile_side.empty() && a.profile_side != "student" && a.profile_side != "reference") {
        error = "--profile-side takes student or reference, not '" + a.profile_side + "'";
        return false;
    }
    if (!a.profile_side.empty() && a.profile_info.empty()) { error = "--profile-side needs --profile-info FILE"; return false; }
    if (a.student.empty() && a.remote_fd < 0) { error = "--student is required"; return false; }
    if (a.remote_fd >= 0 && !a.profile_side.empty()) { error = "--profile-side needs the library in this process, not --remote-student"; return false; }
    return true;
}

int finish(RunReport& report, const Args& args, int code) {
    report.host_lost = report.remote && remote::host_lost();
    if (!args.json.empty() && !write_json(report, args.json)) return kUsage;
    return code;
}

/// The NVIDIA kernel driver's version ("580.159.04"), or "" where /proc does not say.
std::string kernel_driver_version() {
    std::ifstream f("/proc/driver/nvidia/version");
    std::string word, previous;
    while (f >> word) {
        if (previous == "Module" && !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) return word;
        if (word == "Module") previous = word;
    }
    return "";
}

/// Fills the GPU fields of the report; "" when a usable GPU is there, else why not.
std::string describe_gpu(RunReport& report, int min_sm) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return std::string("no usable CUDA GPU here (the CUDA runtime says: ") +
               (e != cudaSuccess ? cudaGetErrorString(e) : "no device found") +
               "). The exercise built; its correctness and timing need a CUDA device. Lesson 1 grades on the CPU.";
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    report.gpu = prop.name;
    report.sm = prop.major * 10 + prop.minor;
    report.driver = kernel_driver_version();
    if (report.driver.empty()) report.driver = "CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    report.cuda = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    if (report.sm < min_sm)
        return "this lesson needs compute capability " + std::to_string(min_sm / 10) + "." +
               std::to_string(min_sm % 10) + " or newer; " + report.gpu + " is " + std::to_string(prop.major) + "." +
               std::to_string(prop.minor) + ", so the lesson is skipped here";
    return "";
}

/// Profile mode: one launch of one side at one benchmark shape, for Nsight Compute. What was
/// launched goes to --profile-info as JSON; the verdict is not touched.
int profile(const Args& args, const LessonInfo& info) {
    nlohmann::json out;
    out["lesson"] = args.lesson;
    out["side"] = args.profile_side;
    auto write = [&](int code) {
        std::ofstream f(args.profile_info);
        f << out.dump(2) << "\n";
        if (!f) {
            std::cerr << "cannot write " << args.profile_info << "\n";
            return static_cast<int>(kUsage);
        }
        return code;
    };
    if (!info.needs_gpu) {
        out["error"] = "lesson 1 runs on the CPU: there is no kernel to profile";
        return write(kUsage);
    }
    RunReport report;
    const std::string why = describe_gpu(report, info.min_sm);
    if (!why.empty()) {
        out["error"] = why;
        return write(kNoGpu);
    }
    out["gpu"] = report.gpu;
    try {
        Submission student(args.student, args.lesson), reference(args.reference, args.lesson);
        PlanOptions gate_only, every;
        every.full_bench = true;
        LessonPlan gate = make_plan(args.lesson, student, &reference, gate_only);
        LessonPlan all = make_plan(args.lesson, student, &reference, every);
        // The default is the gate shape that moves the most bytes: where bandwidth matters most.
        std::string wanted = args.profile_shape;
        if (wanted.empty()) {
            const BenchShape* biggest = nullptr;
            for (const BenchShape& b : gate.bench)
                if (!biggest || b.bytes > biggest->bytes) biggest = &b;
            if (biggest) wanted = biggest->shape + "/" + biggest->dtype;
        }
        const BenchShape* chosen = nullptr;
        out["available"] = nlohmann::json::array();
        // The gate's shapes and the full table's: a gate shape need not be in the full table (lesson 4's
        // 8192x5120 is not), and a learner profiles the shape its gate named.
        for (const std::vector<BenchShape>* table : {&gate.bench, &all.bench})
            for (const BenchShape& b : *table) {
                const std::string label = b.shape + "/" + b.dtype;
                if (std::find(out["available"].begin(), out["available"].end(), label) == out["available"].end())
                    out["available"].push_back(label);
                if (!chosen && b.profile_once && (label == wanted || b.shape == wanted)) chosen = &b;
            }
        if (!chosen) {
            out["error"] = "no benchmark shape '" + wanted + "' in lesson " + std::to_string(args.lesson);
            return write(kUsage);
        }
        out["shape"] = chosen->shape;
        out["dtype"] = chosen->dtype;
        out["bytes"] = chosen->bytes;
        out["kernels"] = chosen->profile_once(args.profile_side == "student");
        return write(kPass);
    } catch (const std::exception& e) {
        out["error"] = std::string("the profiled launch did not run: ") + e.what();
        return write(kFailCorrectness);
    }
}

/// --list-cases: the GPU's full list of case names. Called before anything here touches CUDA, so
/// it needs no GPU. (A plan that asks the submission something while it is built, lesson 10's
/// workspace size, may call the runtime; without a GPU that call fails and the names come out the
/// same.)
int list_cases(const Args& args) { return print_case_names("wb-grader", args.lesson, args.student, args.reference); }

int grade(const Args& args) {
    RunReport report;
    report.lesson = args.lesson;
    report.source = args.source_name.empty() ? args.student : args.source_name;
    report.seed = args.seed_given ? args.seed
                                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const LessonInfo* info = find_lesson(args.lesson);
    if (!info) {
        std::cerr << "unknown lesson " << args.lesson << ": ./grade alone lists the lessons\n";
        return kUsage;
    }
    report.gate_fraction = info->gate_fraction;
    if (!args.profile_side.empty()) return profile(args, *info);
    std::printf("lesson %d (%s): %s\nseed %llu (reproduce with --seed %llu)\n", info->number, info->slug,
                report.source.c_str(), (unsigned long long)report.seed, (unsigned long long)report.seed);
    if (info->needs_gpu) {
        const std::string why = describe_gpu(report, info->min_sm);
        if (!why.empty()) {
            report.verdict = "no-gpu";
            report.reason = why;
            std::printf("\n%s\n", why.c_str());
            return finish(report, args, kNoGpu);
        }
        std::printf("GPU: %s (sm_%d), driver %s, CUDA runtime %s\n", report.gpu.c_str(), report.sm,
                    report.driver.c_str(), report.cuda.c_str());
        set_watchdog_seconds(args.watchdog);
    }

    std::unique_ptr<Submission> student, reference;
    try {
        if (args.remote_fd >= 0) {
            // The submission's code runs in its own process; this one holds none of it, so nothing
            // the submission does can reach the checks or this report.
            report.remote = true;
            std::printf("remote grading: your code runs in its own process; outputs are checked and timed from this one\n");
            remote::install_remote_hooks();
            remote::set_call_timeout(args.watchdog);
            student = remote::connect(remote::student_side, args.remote_fd, args.lesson, report.source, 120);
            if (info->needs_gpu) {
                if (args.reference.empty()) throw std::runtime_error("--reference is required for GPU lessons");
                reference = remote::start_host(remote::reference_side, args.reference, args.lesson, 120);
            }
        } else {
            student = std::make_unique<Submission>(args.student, args.lesson);
            if (info->needs_gpu) {
                if (args.reference.empty()) throw std::runtime_error("--reference is required for GPU lessons");
                install_fenced_memory();  // running off a tensor's end faults, as on the emulator
                reference = std::make_unique<Submission>(args.reference, args.lesson);
            }
        }
    } catch (const std::exception& e) {
        // A library that does not load is a build problem; a host process that died or misbehaved
        // before it was ready is the submission's code running (a static initialiser, ...).
        const bool lost = args.remote_fd >= 0 && remote::host_lost();
        report.verdict = lost ? "fail-correctness" : "fail-build";
        report.reason = e.what();
        std::printf("\n%s\n", e.what());
        return finish(report, args, lost ? kFailCorrectness : kFailBuild);
    }

    try {
        PlanOptions options;
        options.full_bench = args.full_bench;
        LessonPlan plan = make_plan(args.lesson, *student, reference.get(), options);
        if (info->needs_gpu) {
            std::string oracle = self_check_gpu_oracle(grader_stream());
            if (oracle.empty() && plan.self_check) oracle = plan.self_check();
            if (!oracle.empty()) throw std::runtime_error("grader self-check failed: " + oracle);
        }
        if (report.remote && plan.timing_needs_one_process && !plan.bench.empty()) {
            // Chains of launches that overlap on one stream (lesson 7): launches made by two processes
            // cannot, so remote grading checks correctness only.
            plan.bench.clear();
            plan.extra_gate = nullptr;
            std::printf("lesson %d's timing (chains that overlap on one stream) needs the launches in one process: "
                        "not timed under remote grading\n", args.lesson);
        }
        size_t selected = 0;
        for (const Case& c : plan.cases) selected += (!args.small || !c.large) && case_selected(args.filter, c.name);
        std::printf("\ncorrectness: %zu case(s), each repetition on new inputs drawn from the seed\n", selected);
        std::fflush(stdout);
        RunOptions run;
        run.small_only = args.small;
        run.fail_fast = args.fail_fast;
        const std::string fatal = run_cases(plan, report.seed, args.filter, run, report);
        if (report.cases.empty()) {
            report.verdict = "fail-correctness";
            report.reason = "no case matches --cases " + args.filter;
            std::printf("%s\n", report.reason.c_str());
            return finish(report, args, kUsage);
        }
        // Cases skipped after the device became unusable were not run: they count neither as failed nor as run.
        // Nor do the cases --fail-fast left out after a failure.
        const size_t left_out = fail_fast_not_run(report);
        size_t failed = 0, not_run = 0;
        const CaseResult* first = nullptr;
        for (const CaseResult& c : report.cases) {
            if (c.skipped && c.detail == kFailFastNotRun) continue;
            if (c.skipped) {
                ++not_run;
                continue;
            }
            if (!c.passed) {
                ++failed;
                if (!first) first = &c;
            }
        }
        const bool has_gate = info->needs_gpu && !plan.bench.empty();
        if (failed || not_run) {
            report.verdict = "fail-correctness";
            report.reason = !fatal.empty() ? fatal : first ? first->name + ": " + first->detail : "no case could run";
            std::printf("\n%zu of %zu case(s) failed", failed, report.cases.size() - not_run - left_out);
            if (left_out) std::printf("; %zu not run (--fail-fast)", left_out);
            if (not_run) std::printf("; %zu not run (the device was unusable after the failure above)", not_run);
            std::printf(".%s\n", has_gate ? " The gate runs once every case passes." : "");
            const std::string stub = stub_notice(report.cases, args.untouched_stub);
            if (!stub.empty()) {
                report.still_stub = true;
                report.reason = stub;
                std::printf("%s\n", stub.c_str());
            }
            return finish(report, args, kFailCorrectness);
        }
        std::printf("\nall %zu case(s) passed\n", report.cases.size());
        if (!info->needs_gpu || !args.bench || plan.bench.empty()) {
            if (info->needs_gpu && !args.bench) report.reason = "benchmark skipped (--no-bench)";
            return finish(report, args, kPass);
        }
        const ExitCode code = run_bench(plan, args.samples, report);
        print_bench_table(report);
        if (code == kPass) {
            std::printf("\ngate: PASS\n");
        } else {
            report.verdict = code == kFailCorrectness ? "fail-correctness" : "fail-gate";
            report.reason = gate_failure_reason(report);
            if (report.reason.empty()) report.reason = "below the gate on some shape (see the table)";
            std::printf("\ngate: FAIL (%s)\n", report.reason.c_str());
        }
        return finish(report, args, code);
    } catch (const FatalDeviceError& e) {
        report.verdict = "fail-correctness";
        report.reason = e.what();
        std::printf("\n%s\n", e.what());
        finish(report, args, kFailCorrectness);
        std::fflush(stdout);
        std::_Exit(kFailCorrectness);  // the context is unusable; do not wait on it while exiting
    } catch (const std::exception& e) {
        report.verdict = "no-gpu";
        report.reason = std::string("the grader hit an environment problem: ") + e.what();
        std::printf("\n%s\n", report.reason.c_str());
        return finish(report, args, kNoGpu);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    std::string error;
    if (!parse(argc, argv, args, error)) {
        std::cerr << "wb-grader: " << error << "\n" << kUsageText;
        return kUsage;
    }
    if (args.list_cases) {
        // Before anything that touches the GPU: listing needs none.
        const int code = list_cases(args);
        std::fflush(stdout);
        std::_Exit(code);
    }
    if (args.serve_fd >= 0) {
        const int code = workbook::remote::serve(args.serve_fd, args.lesson, args.student);
        std::fflush(stdout);
        std::_Exit(code);
    }
    const int code = grade(args);
    std::fflush(stdout);
    // A hung or crashed kernel can leave the runtime unable to shut down cleanly; the verdict is already out.
    std::_Exit(code);
}
