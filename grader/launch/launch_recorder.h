/// @file launch_recorder.h
/// @brief Sees every kernel launch a submission makes: grid, block, stream and the runtime's answer.
///
/// The grader executable defines the CUDA runtime's launch entry points (`__cudaLaunchKernel`, which
/// `<<<...>>>` calls, `cudaLaunchKernel` and `cudaLaunchKernelExC`, which `cudaLaunchKernelEx`
/// calls) and exports them (grader/launch/launch_hooks.list), so a submission opened with dlopen binds
/// to them before libcudart. Each one records what was asked and forwards to libcudart's own.
/// A launch made another way (the driver API) is not seen: callers treat "nothing recorded" as
/// "unknown", never as "nothing launched".
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "launch/launch_diagnosis.h"

namespace workbook {

/// One launch, as the submission asked for it.
struct RecordedLaunch {
    LaunchShape shape;
    cudaStream_t stream = nullptr;
    cudaError_t result = cudaSuccess;
};

/// Records the launches made while it is alive (one at a time; the grader is single-threaded here).
class LaunchRecording {
public:
    LaunchRecording();
    ~LaunchRecording();
    LaunchRecording(const LaunchRecording&) = delete;
    LaunchRecording& operator=(const LaunchRecording&) = delete;

    /// Stops recording early; launches() keeps what was seen.
    void stop();
    const std::vector<RecordedLaunch>& launches() const { return launches_; }

private:
    std::vector<RecordedLaunch> launches_;
    bool active_ = true;
};

/// The launch as a LaunchShape.
LaunchShape shape_of(dim3 grid, dim3 block, size_t shared, bool from_config);
/// Adds one launch to the live recording, if there is one (the hooks call it).
void record_launch(const LaunchShape& shape, cudaStream_t stream, cudaError_t result);

/// The device's launch limits, read once.
const LaunchLimits& device_launch_limits();

/// "the legacy default stream (0)", "the per-thread default stream", or "another stream (0x...)".
std::string describe_stream(cudaStream_t stream);

}  // namespace workbook
