/// @file run_report.cpp
#include "report/run_report.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace workbook {

bool write_json(const RunReport& r, const std::string& path) {
    nlohmann::json j;
    j["lesson"] = "lesson" + std::to_string(r.lesson);
    j["source"] = r.source;
    j["verdict"] = r.verdict;
    j["reason"] = r.reason;
    j["cases"] = nlohmann::json::array();
    for (const CaseResult& c : r.cases)
        j["cases"].push_back({{"name", c.name}, {"what", c.what}, {"passed", c.passed}, {"skipped", c.skipped},
                              {"detail", c.detail}, {"cause", c.cause}});
    j["bench"] = nlohmann::json::array();
    for (const BenchResult& b : r.bench)
        j["bench"].push_back({{"shape", b.shape},
                              {"dtype", b.dtype},
                              {"bytes", b.bytes},
                              {"student_gbps", b.student_gbps},
                              {"reference_gbps", b.reference_gbps},
                              {"ratio", b.ratio},
                              {"copy_fraction", b.copy_fraction},
                              {"size_copy_gbps", b.size_copy_gbps},
                              {"size_copy_fraction", b.size_copy_fraction},
                              {"noise", b.noise},
                              {"verdict", b.verdict},
                              {"problem", b.problem}});
    j["gate_notes"] = r.gate_notes;
    j["still_stub"] = r.still_stub;
    if (r.remote) j["remote"] = true;
    if (r.host_lost) j["host_lost"] = true;
    j["emulated"] = r.emulated;
    j["gpu"] = r.gpu;
    j["driver"] = r.driver;
    j["cuda"] = r.cuda;
    j["sm"] = r.sm;
    j["copy_gbps"] = r.copy_gbps;
    j["gate_fraction"] = r.gate_fraction;
    j["seed"] = r.seed;
    if (r.clock_samples > 0)
        j["clocks"] = {{"samples", r.clock_samples},    {"sm_mhz", r.sm_clock_mhz},   {"sm_min_mhz", r.sm_clock_min},
                       {"sm_max_mhz", r.sm_clock_max},  {"mem_mhz", r.mem_clock_mhz}, {"mem_min_mhz", r.mem_clock_min},
                       {"mem_max_mhz", r.mem_clock_max}, {"how", "NVML every 10 ms while the timed samples ran"}};
    else if (!r.clock_note.empty())
        j["clocks"] = {{"samples", 0}, {"note", r.clock_note}};
    if (!r.remote_clock.empty()) j["remote_clock"] = r.remote_clock;
    if (r.remote_gate_us > 0) j["remote_gate_us"] = r.remote_gate_us;
    std::ofstream out(path);
    if (!out) {
        std::cerr << "cannot write the JSON report to " << path << ": check the folder exists and is writable\n";
        return false;
    }
    out << j.dump(2) << "\n";
    return static_cast<bool>(out);
}

void print_bench_table(const RunReport& r) {
    std::printf("\n  %-14s %-5s %11s %11s %7s %7s %8s  %s\n", "shape", "dtype", "your GB/s", "ref GB/s", "ratio", "%copy",
                "%copy@sz", "verdict");
    for (const BenchResult& b : r.bench)
        std::printf("  %-14s %-5s %11.1f %11.1f %7.2f %6.1f%% %7.1f%%  %s\n", b.shape.c_str(), b.dtype.c_str(),
                    b.student_gbps, b.reference_gbps, b.ratio, 100.0 * b.copy_fraction, 100.0 * b.size_copy_fraction,
                    b.verdict.c_str());
    double noise = 0;
    for (const BenchResult& b : r.bench) noise = std::max(noise, b.noise);
    std::printf("  device copy bandwidth %.0f GB/s; noise band ±%.1f%% (reference vs reference); "
                "gate: ratio >= %.2f, less the noise band\n",
                r.copy_gbps, 100.0 * noise, r.gate_fraction);
    if (!r.bench.empty())
        std::printf("  %%copy: of that large copy. %%copy@sz: of a plain copy kernel moving the same bytes, "
                    "timed the same way (the roofline at this size: launch, last wave and L2 write-back included)\n");
    if (r.clock_samples > 0)
        std::printf("  clocks while timing (NVML, %d readings): SM %.0f MHz (%.0f-%.0f), memory %.0f MHz (%.0f-%.0f)\n",
                    r.clock_samples, r.sm_clock_mhz, r.sm_clock_min, r.sm_clock_max, r.mem_clock_mhz, r.mem_clock_min,
                    r.mem_clock_max);
    else if (!r.clock_note.empty())
        std::printf("  clocks while timing: not measured (%s)\n", r.clock_note.c_str());
    for (const std::string& note : r.gate_notes) std::printf("  %s\n", note.c_str());
}

}  // namespace workbook
