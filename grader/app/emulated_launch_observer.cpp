/// @file launch_observer.cpp
/// @brief Feeds the grader's launch recording from the emulated runtime, as the launch hooks do on the GPU,
/// so a refused launch is named with its grid and block on the emulator too.
#include <cuda_runtime.h>

#include "launch/launch_recorder.h"

namespace {

void observe(const emu::LaunchSpec& spec, cudaError_t result) {
    workbook::record_launch(workbook::shape_of(spec.grid, spec.block, spec.dynamic_smem, spec.from_config),
                            spec.stream, result);
}

/// Installed when the emulated grader starts.
[[maybe_unused]] const bool g_installed = (emu::set_launch_observer(&observe), true);

}  // namespace
