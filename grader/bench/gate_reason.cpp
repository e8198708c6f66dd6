/// @file gate_reason.cpp
#include "bench/gate_reason.h"

#include <cstdio>

namespace workbook {

std::string gate_failure_reason(const RunReport& r) {
    for (const char* verdict : {"wrong", "error", "impossible"})
        for (const BenchResult& b : r.bench)
            if (b.verdict == verdict) return b.shape + " " + b.dtype + ": " + b.problem;
    const BenchResult* worst = nullptr;
    int slow = 0;
    for (const BenchResult& b : r.bench)
        if (b.verdict == "slow") {
            ++slow;
            if (!worst || b.ratio < worst->ratio) worst = &b;
        }
    std::string reason;
    if (worst) {
        char buf[320];
        std::snprintf(buf, sizeof buf,
                      "below the gate: %s %s runs at %.2f of the reference's bandwidth (%.1f against %.1f GB/s); "
                      "the gate asks for %.2f",
                      worst->shape.c_str(), worst->dtype.c_str(), worst->ratio, worst->student_gbps,
                      worst->reference_gbps, r.gate_fraction);
        reason = buf;
        if (slow > 1)
            reason += " (" + std::to_string(slow - 1) + (slow == 2 ? " more shape is" : " more shapes are") +
                      " below it too: see the table)";
    }
    if (!r.extra_gate_problem.empty()) reason += (reason.empty() ? "" : "; and ") + r.extra_gate_problem;
    return reason;
}

}  // namespace workbook
