/// @file emulated_main.cpp
/// @brief wb-grader-emu: grades one submission's correctness on the CPU emulator.
///
/// The same plans, cases, oracle, tolerance and failure reports as wb-grader (they are its
/// own sources, compiled against the emulated runtime). What a CPU cannot do is listed as
/// not run: the bandwidth gate, and cases too large to emulate in reasonable time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "engine/correctness_runner.h"
#include "engine/gpu_case.h"
#include "emu/control.h"
#include "report/failure_summary.h"
#include "engine/launch_guard.h"
#include "engine/lesson_registry.h"
#include "app/emulated_sampling.h"
#include "app/emulated_traffic.h"
#include "app/case_names.h"
#include "app/option_reader.h"
#include "report/run_report.h"

namespace {

using namespace workbook;

/// Benchmark shapes whose calls have checks of their own (lessons 10 and 11) are checked on their first
/// rows only, about this many elements (at least one row); the others run whole, on sampled blocks.
constexpr int64_t kCheckedBenchElements = int64_t(1) << 20;

const char* kLabel = "correctness on the CPU emulator; the bandwidth gate needs a GPU";

struct Args {
    int lesson = 0;
    std::string student, reference, source_name, json, filter;
    std::string traffic;  ///< --traffic FILE: the traffic report's figures (needs --reference)
    uint64_t seed = 0;
    bool seed_given = false, untouched_stub = false;
    bool fail_fast = false;   ///< --fail-fast: stop at the first failing case
    bool list_cases = false;  ///< --list-cases: print the plan's case names and run nothing
    double watchdog = 20;
};

const char* kUsageText =
    "usage: wb-grader-emu --lesson N --student LIB.so [--source-name NAME] [--seed S] [--json FILE]\n"
    "                     [--cases TEXT[,=NAME...]] [--watchdog SECONDS] [--untouched-stub] [--fail-fast]\n"
    "                     [--reference LIB.so --traffic FILE]\n"
    "                     (--traffic: once every case passed, each benchmark shape of the submission and of\n"
    "                     the reference is run on sampled blocks and its memory traffic written to FILE)\n"
    "       wb-grader-emu --list-cases --lesson N --student LIB.so [--reference LIB.so]\n"
    "                     (prints the name of every case of the lesson's plan as the GPU grader builds it,\n"
    "                     one a line; runs nothing)\n"
    "Normally run through ./grade, which compiles the submission for the emulator first.\n";

bool parse(int argc, char** argv, Args& a, std::string& error) {
    OptionReader options(argc, argv);
    while (options.next()) {
        const std::string& arg = options.arg();
        auto value = [&](const char* what) { return options.value(what, error); };
        const char* v = nullptr;
        if (arg == "--lesson") { if (!(v = value("a lesson number"))) return false; a.lesson = std::atoi(v); }
        else if (arg == "--student") { if (!(v = value("a path"))) return false; a.student = v; }
        else if (arg == "--reference") { if (!(v = value("a path"))) return false; a.reference = v; }
        else if (arg == "--list-cases") a.list_cases = true;
        else if (arg == "--source-name") { if (!(v = value("a name"))) return false; a.source_name = v; }
        else if (arg == "--json") { if (!(v = value("a file"))) return false; a.json = v; }
        else if (arg == "--traffic") { if (!(v = value("a file"))) return false; a.traffic = v; }
        else if (arg == "--cases") { if (!(v = value("substrings, comma-separated"))) return false; a.filter = v; }
        else if (arg == "--untouched-stub") a.untouched_stub = true;
        else if (arg == "--fail-fast") a.fail_fast = true;
        else if (arg == "--watchdog") { if (!(v = value("seconds"))) return false; a.watchdog = std::atof(v); }
        else if (arg == "--seed") { if (!options.seed(a.seed, error)) return false; a.seed_given = true; }
        else if (arg == "--help" || arg == "-h") { std::cout << kUsageText; std::exit(0); }
        else { error = "unknown option " + arg; return false; }
    }
    if (a.list_cases) {
        if (!find_lesson(a.lesson) || !has_plan(a.lesson)) {
            error = "--lesson must name a lesson with a case plan in this build";
            return false;
        }
        if (a.student.empty()) { error = "--student is required"; return false; }
        return true;
    }
    if (!a.reference.empty() && a.traffic.empty()) {
        error = "--reference is used by --list-cases and --traffic only (correctness never runs the reference)";
        return false;
    }
    if (!a.traffic.empty() && a.reference.empty()) {
        error = "--traffic needs --reference: the report shows the reference's figures beside the submission's";
        return false;
    }
    const LessonInfo* info = find_lesson(a.lesson);
    if (!info || !info->needs_gpu) {
        error = "--lesson must be a GPU lesson, 2 or more (lesson 1 grades on the CPU already)";
        return false;
    }
    if (a.student.empty()) { error = "--student is required"; return false; }
    return true;
}

int finish(RunReport& report, const Args& args, int code) {
    if (!args.json.empty() && !write_json(report, args.json)) return kUsage;
    return code;
}

/// Takes the cases a lesson leaves to the GPU out of the plan (they are reported as not run); the large
/// ones of the rest run on a sample of their blocks (app/emulated_sampling.h).
std::vector<CaseResult> set_aside_large_cases(LessonPlan& plan, const std::string& filter) {
    std::vector<CaseResult> not_run;
    std::vector<Case> kept;
    for (Case& c : plan.cases) {
        if (!case_selected(filter, c.name)) continue;
        if (!c.not_on_cpu.empty()) {
            CaseResult r{c.name, c.what, false, true, ""};
            r.detail = "not run on the CPU emulator: " + c.not_on_cpu;
            not_run.push_back(r);
        } else {
            // Each case runs as often as on the GPU (twice, mostly: once captured into a graph, once
            // launched directly), with fresh inputs in tensors allocated again, which the emulated
            // heap places at the same addresses as cudaMalloc does: a kernel that keeps a result from
            // one call to the next, keyed by a pointer, fails as on the GPU, and so does one whose
            // result depends on the order its warps or blocks run in (drawn anew at every launch).
            emulated::sample_if_large(c);
            kept.push_back(std::move(c));
        }
    }
    plan.cases = std::move(kept);
    return not_run;
}

/// --list-cases: the GPU grader's full list of case names, the cases too large for a CPU and the
/// full-size benchmark shapes included. Runs nothing.
int list_cases(const Args& args) {
    return print_case_names("wb-grader-emu", args.lesson, args.student, args.reference);
}

int grade(const Args& args) {
    RunReport report;
    report.lesson = args.lesson;
    report.source = args.source_name.empty() ? args.student : args.source_name;
    report.seed = args.seed_given ? args.seed
                                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    report.gpu = "CPU emulator";
    report.emulated = true;
    const LessonInfo* info = find_lesson(args.lesson);
    report.gate_fraction = info->gate_fraction;
    std::printf("lesson %d (%s): %s\nseed %llu (reproduce with --seed %llu)\n", info->number, info->slug,
                report.source.c_str(), (unsigned long long)report.seed, (unsigned long long)report.seed);
    std::printf("%s\n", kLabel);
    emu::set_watchdog_seconds(args.watchdog);
    // Blocks and warps run in orders drawn from the seed: the same seed schedules the same way.
    emu::set_schedule_seed(report.seed);
    emulated::install_sampling();

    // A lesson's manifest says whether the emulator grades it ("emulated"): a new lesson says it needs a
    // GPU until its features are emulated and its kernels checked here (scripts/emulator-check).
    if (!info->emulated || !has_plan(args.lesson)) {
        report.verdict = "no-gpu";
        report.reason = "lesson " + std::to_string(args.lesson) +
                        " is not graded on the CPU emulator yet: this lesson needs a GPU";
        std::printf("\n%s\n", report.reason.c_str());
        return finish(report, args, kNoGpu);
    }

    std::unique_ptr<Submission> student, reference;
    try {
        student = std::make_unique<Submission>(args.student, args.lesson);
        if (!args.reference.empty()) reference = std::make_unique<Submission>(args.reference, args.lesson);
    } catch (const std::exception& e) {
        report.verdict = "fail-build";
        report.reason = e.what();
        std::printf("\n%s\n", e.what());
        return finish(report, args, kFailBuild);
    }

    try {
        PlanOptions options;
        options.max_checked_bench_elements = kCheckedBenchElements;
        options.cpu_emulator = true;
        set_tight_inputs(true);
        options.sampled_calls = true;
        // The reference is never run for correctness: only the traffic report records it (without
        // one, the student stands in for it).
        LessonPlan plan = make_plan(args.lesson, *student, reference ? reference.get() : student.get(), options);
        const std::vector<CaseResult> not_run = set_aside_large_cases(plan, args.filter);
        size_t selected = 0;
        for (const Case& c : plan.cases) selected += case_selected(args.filter, c.name);
        std::printf("\ncorrectness: %zu case(s), drawn from the seed\n", selected);
        std::fflush(stdout);
        RunOptions run;
        run.fail_fast = args.fail_fast;
        const std::string fatal = run_cases(plan, report.seed, args.filter, run, report);
        for (const CaseResult& c : not_run) {
            std::printf("  ----  %s  (not run on the CPU emulator: left to the GPU)\n", c.name.c_str());
            report.cases.push_back(c);
        }
        if (report.cases.empty()) {
            report.verdict = "fail-correctness";
            report.reason = "no case matches --cases " + args.filter;
            std::printf("%s\n", report.reason.c_str());
            return finish(report, args, kUsage);
        }
        const size_t left_out = fail_fast_not_run(report);
        size_t failed = 0, ran = 0;
        const CaseResult* first = nullptr;
        for (const CaseResult& c : report.cases) {
            if (c.skipped && c.detail.rfind("not run on the CPU emulator", 0) == 0) continue;
            if (c.skipped && c.detail == kFailFastNotRun) continue;
            ++ran;
            if (!c.passed) {
                ++failed;
                if (!first) first = &c;
            }
        }
        report.gate_notes.push_back(std::string("not run: the bandwidth gate (") + kLabel + ")");
        if (failed) {
            report.verdict = "fail-correctness";
            report.reason = !fatal.empty() ? fatal : first->name + ": " + first->detail;
            std::printf("\n%zu of %zu case(s) failed (%s)", failed, ran, kLabel);
            if (left_out) std::printf("; %zu not run (--fail-fast)", left_out);
            std::printf(".\n");
            const std::string stub = stub_notice(report.cases, args.untouched_stub);
            if (!stub.empty()) {
                report.still_stub = true;
                report.reason = stub;
                std::printf("%s\n", stub.c_str());
            }
            return finish(report, args, kFailCorrectness);
        }
        report.reason = kLabel;
        std::printf("\nall %zu case(s) passed on the CPU emulator; %zu not run (left to the GPU); the bandwidth "
                    "gate was not run: it needs a GPU\n",
                    ran, not_run.size());
        if (!args.traffic.empty()) {
            std::printf("\ntraffic: each benchmark shape once on sampled blocks, yours and the reference's\n");
            std::fflush(stdout);
            const std::string problem = emulated::write_traffic(plan, args.lesson, info->gate_fraction, args.traffic);
            if (!problem.empty()) std::printf("  the traffic report could not be written: %s\n", problem.c_str());
        }
        return finish(report, args, kPass);
    } catch (const FatalDeviceError& e) {
        report.verdict = "fail-correctness";
        report.reason = e.what();
        std::printf("\n%s\n", e.what());
        return finish(report, args, kFailCorrectness);
    } catch (const std::exception& e) {
        report.verdict = "no-gpu";
        report.reason = std::string("the emulated grader hit an environment problem: ") + e.what();
        std::printf("\n%s\n", report.reason.c_str());
        return finish(report, args, kNoGpu);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    std::string error;
    if (!parse(argc, argv, args, error)) {
        std::cerr << "wb-grader-emu: " << error << "\n" << kUsageText;
        return kUsage;
    }
    const int code = args.list_cases ? list_cases(args) : grade(args);
    std::fflush(stdout);
    std::_Exit(code);
}
