/// @file emulated_traffic.cpp
/// @brief The traffic report's recording: each benchmark shape's student and reference call, once,
///        on sampled blocks with the emulator's recorder on, written as JSON for ./grade.
#include "app/emulated_traffic.h"

#include <cstdio>
#include <exception>
#include <fstream>

#include <nlohmann/json.hpp>

#include "app/emulated_sampling.h"
#include "emu/control.h"

namespace workbook::emulated {
namespace {

nlohmann::json to_json(const emu::TrafficLaunch& t) {
    return {{"units", t.units},
            {"units_run", t.units_run},
            {"grid_blocks", t.grid_blocks},
            {"threads_per_block", t.threads_per_block},
            {"blocks_per_unit", t.blocks_per_unit},
            {"shared_bytes_per_block", t.shared_bytes_per_block},
            {"dram_read_bytes", t.dram_read_bytes},
            {"dram_write_bytes", t.dram_write_bytes},
            {"global_requests", t.global_requests},
            {"global_sectors", t.global_sectors},
            {"global_lane_bytes", t.global_lane_bytes},
            {"global_lane_accesses", t.global_lane_accesses},
            {"shared_requests", t.shared_requests},
            {"shared_wavefronts", t.shared_wavefronts},
            {"inflight_bytes_per_thread", t.inflight_bytes_per_thread}};
}

/// One side's launches at one shape, or the reason they could not be recorded.
nlohmann::json record(const BenchShape& b, bool student) {
    nlohmann::json side;
    set_profiling(true);
    emu::begin_traffic();
    try {
        b.profile_once(student);
        side["launches"] = nlohmann::json::array();
        for (const emu::TrafficLaunch& t : emu::end_traffic()) side["launches"].push_back(to_json(t));
    } catch (const std::exception& e) {
        emu::end_traffic();
        side["error"] = e.what();
    }
    set_profiling(false);
    return side;
}

}  // namespace

std::string write_traffic(const LessonPlan& plan, int lesson, double gate_fraction, const std::string& path) {
    nlohmann::json j;
    j["lesson"] = lesson;
    j["gate_fraction"] = gate_fraction;
    j["shapes"] = nlohmann::json::array();
    for (const BenchShape& b : plan.bench) {
        if (!b.profile_once) continue;
        std::printf("  recording %s %s on sampled blocks\n", b.shape.c_str(), b.dtype.c_str());
        std::fflush(stdout);
        nlohmann::json s;
        s["shape"] = b.shape;
        s["dtype"] = b.dtype;
        s["bytes"] = b.bytes;
        s["student"] = record(b, true);
        s["reference"] = record(b, false);
        j["shapes"].push_back(s);
    }
    std::ofstream out(path);
    if (!out) return "cannot write " + path;
    out << j.dump(1) << "\n";
    return "";
}

}  // namespace workbook::emulated
