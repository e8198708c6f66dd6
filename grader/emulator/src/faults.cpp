/// @file faults.cpp
/// @brief Faults found while a kernel runs: where the thread is, the launch's first fault, the words.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

std::string dim_text(uint3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

std::string at_line(const void* pc) {
    const std::string line = source_line(pc);
    return line.empty() ? std::string() : " at " + line;
}

std::string hex(unsigned m) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", m);
    return b;
}

std::string where_now() {
    ThreadState* t = tls_thread;
    if (!t || !tls_unit) return "";
    return "block " + dim_text(tls_unit->blocks[t->rank].idx) + " thread " + dim_text(t->idx);
}

void raise_fault(cudaError_t code, const std::string& text) {
    UnitState* u = tls_unit;
    ThreadState* t = tls_thread;
    if (!u || !t) {
        std::fprintf(stderr, "emulator: %s\n", text.c_str());
        std::abort();
    }
    u->launch->record_fault(code, text);
    t->state = ThreadState::faulted;
    // Back to the scheduler for good: it abandons this block, and this fiber is never resumed.
    for (;;) t->caller = std::move(t->caller).resume();
}

void LaunchState::record_fault(cudaError_t code, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    if (fault.code == cudaSuccess) {
        fault.code = code;
        fault.text = text;
    }
    aborted = true;
}

}  // namespace emu
