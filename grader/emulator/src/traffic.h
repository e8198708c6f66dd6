/// @file traffic.h
/// @brief The traffic recorder (docs/emulator.md, "Traffic"): what a recorded launch's sampled units
///        ask of the memory system, warp by warp, folded into the figures of emu::TrafficLaunch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "emu/control.h"

namespace emu {

struct LaunchState;
struct UnitState;
class UnitTrace;

/// The trace of the unit this worker runs in a recorded launch (null otherwise).
extern thread_local UnitTrace* tls_trace;

/// True while the grader records traffic (emu::begin_traffic).
bool traffic_recording();

/// Starts the trace of one unit of a recorded launch on this worker (sets tls_trace).
void begin_unit_trace(const LaunchState& l, const UnitState& u);
/// Folds the unit's trace into the launch's figures and clears tls_trace.
void end_unit_trace();
/// One access of kernel code: global (device heap) or shared (`shared` set), from thread
/// `thread` (its index in the unit) at `pc`.
void trace_access(uintptr_t address, std::size_t bytes, bool write, bool shared, const void* pc);
/// Thread `thread` of the unit stopped (a barrier, a warp operation, a wait, its end): the loads
/// it issued since it last ran are one run of independent loads.
void trace_thread_paused(int thread);
/// The launch's units have all run: its figures are added to the recording.
void end_launch_trace(const LaunchState& l, uint64_t units, uint64_t units_run, std::size_t shared_bytes);

}  // namespace emu
