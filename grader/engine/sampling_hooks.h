/// @file sampling_hooks.h
/// @brief Where the CPU emulator runs a large call on a sample of its blocks (docs/emulator.md,
///        "Sampled calls"): its tensors get their contents lazily, and the checks look at the rows
///        the sample wrote and the rows it had to write, not at every row.
///
/// Header only, empty by default: the GPU grader never sets these, and every check then covers
/// every row. The emulated grader installs them at start (grader/app/emulated_sampling.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "workbook/inputs.h"

namespace workbook {

class DeviceTensor;
struct GpuCall;

/// Why the checks ask for a tensor's rows.
enum class RowsFor {
    compare,    ///< an output compared with the oracle (rows written, and the rows that must be)
    unchanged,  ///< an input checked unchanged, or the padding between rows (rows touched)
};

/// Set by the emulated grader; null members mean every row, as on the GPU.
struct SamplingHooks {
    /// A call starts (before its tensors exist) and ends (after they are freed).
    void (*begin_call)(const GpuCall& call) = nullptr;
    void (*end_call)() = nullptr;
    /// Gives `t` its contents lazily (the input `spec`, or the poison of an output when null) and
    /// returns true, or returns false and the caller writes them now.
    bool (*lazy_contents)(const DeviceTensor& t, const ValueSpec* spec) = nullptr;
    /// The rows of `t` to check, sorted, their contents made readable, in `rows`; false: every row.
    bool (*rows)(const DeviceTensor& t, RowsFor why, std::vector<int64_t>& rows) = nullptr;
};

/// The hooks in force (one per process).
inline SamplingHooks& sampling_hooks() {
    static SamplingHooks hooks;
    return hooks;
}

/// Opens the sampling of one call for as long as it lives (nothing without hooks).
class SampledCallScope {
public:
    explicit SampledCallScope(const GpuCall& call) {
        if (sampling_hooks().begin_call) sampling_hooks().begin_call(call);
    }
    ~SampledCallScope() {
        if (sampling_hooks().end_call) sampling_hooks().end_call();
    }
    SampledCallScope(const SampledCallScope&) = delete;
    SampledCallScope& operator=(const SampledCallScope&) = delete;
};

}  // namespace workbook
