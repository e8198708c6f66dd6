/// @file launch_guard.h
/// @brief Runs a submission's launch the way the grader trusts: on the grader's stream,
///        optionally captured into a CUDA graph, with a watchdog on the wait.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <stdexcept>
#include <string>

namespace workbook {

/// The device is unusable (illegal address, hang, ...): the run ends after reporting it.
class FatalDeviceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The grader's stream: created once, non-blocking, so work on the legacy default stream is not hidden by it.
cudaStream_t grader_stream();

/// Seconds a single wait may take before the run is declared hung.
void set_watchdog_seconds(double seconds);

/// True once a kernel has outrun the watchdog. From then on nothing may wait on the device:
/// a free or a synchronise would block on the hung kernel for ever, so destructors skip them.
bool device_hung();

/// Waits for `stream` with the watchdog. Errors that poison the context throw FatalDeviceError;
/// other errors return their text, success returns "".
std::string wait_with_watchdog(cudaStream_t stream, const std::string& what);

/// What kind of problem a launch had; the first cause that explains a failure is named.
enum class LaunchProblem {
    none,
    launch_error,  ///< a launch was refused (configuration past a limit, ...) or the entry point returned an error
    stream,        ///< work went to another stream, or the submission synchronised during capture
    kernel_error,  ///< the kernel ran and failed
};

/// What happened when the submission was asked to launch.
struct LaunchReport {
    std::string problem;  ///< "" when the launch looked right
    LaunchProblem kind = LaunchProblem::none;
    size_t graph_nodes = 0;
};

/// Calls `launch(stream)`. With `capture`, records it into a graph on the grader's stream, checks
/// that it enqueued work there (or nothing, when `expect_empty`), and replays the graph. Waits for the result.
LaunchReport run_launch(const std::function<cudaError_t(cudaStream_t)>& launch, bool capture, bool expect_empty,
                        const std::string& case_name);

/// True for the errors after which the CUDA context cannot be used any more.
bool is_sticky(cudaError_t e);

}  // namespace workbook
