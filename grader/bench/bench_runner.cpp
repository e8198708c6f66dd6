/// @file bench_runner.cpp
/// @brief Each shape is one Google Benchmark benchmark with manual timing: every iteration
///        takes one cold sample of the student, then two of the reference (the second
///        gives the noise band), in alternating order so neither side always goes first.
#include "bench/bench_runner.h"

#include "engine/buffer_hooks.h"

#include <benchmark/benchmark.h>

#include "bench/clock_sampler.h"

#include <cstdio>

#include "engine/gpu_case.h"
#include "engine/launch_guard.h"
#include "workbook/gate.h"

namespace workbook {
namespace {

/// Google Benchmark's own report is replaced by the gate's table.
class SilentReporter : public benchmark::BenchmarkReporter {
public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

ExitCode run_bench(LessonPlan& plan, int samples, RunReport& report) {
    report.copy_gbps = copy_bandwidth_gbps();
    ClockSampler clocks;
    ClockSampler* sampler = &clocks;
    std::vector<BenchSamples> all(plan.bench.size());
    std::vector<std::string> errors(plan.bench.size()), wrong_outputs(plan.bench.size());
    std::vector<char> verified(plan.bench.size(), 0);
    for (size_t i = 0; i < plan.bench.size(); ++i) {
        BenchShape* shape = &plan.bench[i];
        BenchSamples* out = &all[i];
        std::string* error = &errors[i];
        std::string* wrong = &wrong_outputs[i];
        char* done = &verified[i];
        const std::string name = shape->shape + "/" + shape->dtype;
        benchmark::RegisterBenchmark(name.c_str(), [shape, out, error, wrong, done, sampler](benchmark::State& state) {
            // The clocks count while this shape's samples run (warm-up included: the GPU is as busy).
            struct Counting {
                ClockSampler* c;
                ~Counting() { c->end(); }
            } counting{sampler};
            sampler->begin();
            try {
                for (int w = 0; w < 3; ++w) {  // warm-up: module load, graph upload, first-touch
                    shape->time_student();
                    shape->time_reference();
                }
                int k = 0;
                for (auto _ : state) {
                    double s = 0, r = 0, r2 = 0;
                    if (k++ % 2 == 0) {
                        s = shape->time_student();
                        r = shape->time_reference();
                        r2 = shape->time_reference();
                    } else {
                        r = shape->time_reference();
                        r2 = shape->time_reference();
                        s = shape->time_student();
                    }
                    out->student.push_back(s);
                    out->reference.push_back(r);
                    out->reference_again.push_back(r2);
                    state.SetIterationTime(s);
                }
                // Remote grading keeps many tensor sets per shape: checked and freed before the next shape.
                if (remote_grading()) {
                    *wrong = shape->verify_student();
                    *done = 1;
                }
            } catch (const FatalDeviceError&) {
                throw;
            } catch (const std::exception& e) {
                *error = e.what();
                state.SkipWithError(error->c_str());
            }
        })->UseManualTime()->Iterations(samples)->Unit(benchmark::kMicrosecond);
    }
    int argc = 1;
    char arg0[] = "wb-grader";
    char* argv[] = {arg0, nullptr};
    benchmark::Initialize(&argc, argv);
    std::printf("\ntiming %zu shape(s), %d cold samples each (L2 cleared before every sample)...\n",
                plan.bench.size(), samples);
    std::fflush(stdout);
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
    const ClockReading c = clocks.reading();
    report.clock_samples = c.samples;
    report.sm_clock_mhz = c.sm_mhz, report.sm_clock_min = c.sm_min, report.sm_clock_max = c.sm_max;
    report.mem_clock_mhz = c.mem_mhz, report.mem_clock_min = c.mem_min, report.mem_clock_max = c.mem_max;
    report.clock_note = c.note;
    if (remote_grading()) {
        report.remote_clock = buffer_hooks().clock_used;
        report.remote_gate_us = buffer_hooks().gate_seconds * 1e6;
        if (report.remote_clock == "grouped") {
            char note[400];
            std::snprintf(note, sizeof note,
                          "timed from outside the submission's process by the grader's own events on its stream, each "
                          "group of launches held behind a word the grader writes (stream memory operations): no "
                          "process hop inside the clock; the switch between the processes' contexts, %.1f us a group "
                          "(measured through the reference's process), is taken off",
                          report.remote_gate_us);
            report.gate_notes.push_back(note);
        } else if (report.remote_clock == "stream")
            report.gate_notes.push_back("timed from outside the submission's process by the grader's own events on its "
                                        "stream, that process's launches held behind a word the grader writes (stream "
                                        "memory operations): no process hop is inside the clock, but the GPU's switch "
                                        "between the two processes' contexts is (about 0.3 ms a batch)");
        else if (report.remote_clock == "wall")
            report.gate_notes.push_back("timed from outside the submission's process by the grader's wall clock, from "
                                        "sending each batch to its answer: the hop between the processes is inside it");
    }

    ExitCode code = kPass;
    for (size_t i = 0; i < plan.bench.size(); ++i) {
        const BenchShape& shape = plan.bench[i];
        BenchResult b;
        b.shape = shape.shape;
        b.dtype = shape.dtype;
        b.bytes = shape.bytes;
        if (!errors[i].empty()) {
            b.verdict = "error";
            b.problem = errors[i];
            report.gate_notes.push_back(shape.shape + " " + shape.dtype + ": " + errors[i]);
            report.bench.push_back(b);
            code = kFailGate;
            continue;
        }
        b.student_gbps = gbps(shape.bytes, median(all[i].student));
        b.reference_gbps = gbps(shape.bytes, median(all[i].reference));
        b.ratio = b.reference_gbps > 0 ? b.student_gbps / b.reference_gbps : 0;
        b.copy_fraction = report.copy_gbps > 0 ? b.student_gbps / report.copy_gbps : 0;
        b.noise = noise_band(all[i].reference, all[i].reference_again);
        const GateVerdict v =
            gate_verdict(b.student_gbps, b.reference_gbps, report.copy_gbps, report.gate_fraction, b.noise);
        b.verdict = to_string(v);
        const std::string wrong = verified[i] ? wrong_outputs[i] : shape.verify_student();
        // After verify_student has freed the shape's tensors, so the copy has the memory.
        b.size_copy_gbps = copy_bandwidth_gbps(shape.bytes);
        b.size_copy_fraction = b.size_copy_gbps > 0 ? b.student_gbps / b.size_copy_gbps : 0;
        if (!wrong.empty()) {
            b.verdict = "wrong";
            b.problem = "the outputs of the timed launches are wrong: " + wrong;
            report.gate_notes.push_back(shape.shape + " " + shape.dtype + ": " + b.problem);
            code = kFailCorrectness;
        } else if (v == GateVerdict::impossible) {
            b.problem = "faster than 1.05 x the device copy bandwidth, which cannot be true (a measurement or "
                        "caching artefact); the result is rejected";
            report.gate_notes.push_back(shape.shape + " " + shape.dtype + ": " + b.problem);
            if (code == kPass) code = kFailGate;
        } else if (v == GateVerdict::slow && code == kPass) {
            code = kFailGate;
        }
        report.bench.push_back(b);
    }
    if (plan.extra_gate && remote_grading()) {
        report.gate_notes.push_back(
            "the lesson's own gate (a chain of launches on one stream) is not run under remote grading: "
            "the launches of two processes cannot overlap");
    } else if (plan.extra_gate) {
        const std::string problem = plan.extra_gate(report.gate_notes);
        if (!problem.empty()) {
            report.extra_gate_problem = problem;
            report.gate_notes.push_back(problem);
            if (code == kPass) code = kFailGate;
        }
    }
    return code;
}

}  // namespace workbook
