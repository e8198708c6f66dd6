/// @file remote_trace.cpp
#include "remote/remote_trace.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace workbook::remote {

bool remote_trace_on() {
    static const bool on = [] {
        const char* v = std::getenv("WORKBOOK_REMOTE_TRACE");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

std::string remote_trace_line(double seconds, const std::string& side, long pid, const std::string& what) {
    char head[96];
    std::snprintf(head, sizeof head, "remote-trace t=%.6f side=%s pid=%ld ", seconds, side.c_str(), pid);
    return head + what;
}

void remote_trace(const char* side, const std::string& what) {
    if (!remote_trace_on()) return;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::string line =
        remote_trace_line(static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9, side, static_cast<long>(getpid()), what);
    // One write per line: the two processes share the log, and a hang must not keep a line buffered.
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

double batch_phase_seconds(double call_timeout, const char* asked) {
    if (asked && *asked) {
        char* end = nullptr;
        const double v = std::strtod(asked, &end);
        if (end && *end == '\0' && v > 0) return v;
    }
    return call_timeout + 30;
}

}  // namespace workbook::remote
