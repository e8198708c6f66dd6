/// @file emulated_sampling.h
/// @brief How the emulated grader runs a large case: on a sample of its blocks, its tensors given
///        contents only where touched, its checks on the rows the sample wrote and the rows it had
///        to write (docs/emulator.md, "Sampled calls").
#pragma once

#include <cstdint>

#include "engine/case_registry.h"

namespace workbook::emulated {

/// A case whose largest tensor spans more elements than this runs on a sample of blocks, where its
/// checks allow it (the engine's own: no lesson-specific fill, compare or check).
constexpr int64_t kSampledElements = int64_t(1) << 21;

/// From the second repetition on, a case past this many elements runs on a sample of blocks too: its
/// first repetition has checked every row, and what a repetition adds (a call at the same addresses
/// with new inputs, in another block order) shows on a sample.
constexpr int64_t kSampledRepeatElements = int64_t(1) << 16;

/// Installs the engine's sampling hooks (engine/sampling_hooks.h); once, at start.
void install_sampling();

/// While set, every call is a sampled call, whatever its size or checks: the traffic report runs each
/// benchmark shape once and checks nothing (emulated_traffic.cpp).
void set_profiling(bool on);

/// Wraps a case's `run` so that the calls of a large case, and of a repetition after the first of a
/// case past kSampledRepeatElements, run on a sample of blocks where their checks allow it; adds to a
/// large case's description how the CPU emulator runs it. Small cases are left as they are.
void sample_if_large(Case& c);

}  // namespace workbook::emulated
