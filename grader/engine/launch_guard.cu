/// @file launch_guard.cu
#include "engine/launch_guard.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/gpu_checks.h"
#include "launch/launch_recorder.h"
#include "workbook/cuda_check.h"

namespace workbook {
namespace {
double g_watchdog_seconds = 30.0;
std::atomic<bool> g_device_hung{false};

/// Last resort after a hang: if some call still blocks on the device, the run ends anyway
/// with the reason on stdout, instead of hanging its caller.
void start_exit_timer(std::string reason) {
    std::thread([reason = std::move(reason)] {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        std::printf("\n%s\nthe grader could not finish its report after the hang; stopping.\n", reason.c_str());
        std::fflush(stdout);
        std::_Exit(1);
    }).detach();
}
}  // namespace

bool device_hung() { return g_device_hung.load(); }

cudaStream_t grader_stream() {
    static cudaStream_t stream = [] {
        cudaStream_t s = nullptr;
        WB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        return s;
    }();
    return stream;
}

void set_watchdog_seconds(double seconds) { g_watchdog_seconds = seconds; }

bool is_sticky(cudaError_t e) {
    switch (e) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorMisalignedAddress:
        case cudaErrorIllegalInstruction:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorHardwareStackError:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout:
        case cudaErrorECCUncorrectable:
            return true;
        default:
            return false;
    }
}

std::string wait_with_watchdog(cudaStream_t stream, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        const cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) {
            const std::string text = std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
            // A launch that ran out of time did not crash: its text says why, and no index is to blame.
            if (is_sticky(e) && e == cudaErrorLaunchTimeout)
                throw FatalDeviceError(what + ": the kernel was stopped: " + text);
            if (is_sticky(e))
                throw FatalDeviceError(what + ": the kernel crashed with " + text +
                                       "; usually an out-of-bounds index or a misaligned vector access");
            return text;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > g_watchdog_seconds) {
            const std::string reason = what + ": the kernel did not finish within " +
                                       std::to_string(static_cast<int>(g_watchdog_seconds)) +
                                       " s (a hang: a loop that never ends, or a barrier some threads never reach)";
            g_device_hung = true;
            start_exit_timer(reason);
            throw FatalDeviceError(reason);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(waited < 0.01 ? 20 : 1000));
    }
    const cudaError_t late = cudaGetLastError();
    if (late != cudaSuccess) {
        if (is_sticky(late)) throw FatalDeviceError(what + ": " + cudaGetErrorName(late));
        return std::string(cudaGetErrorName(late)) + " (" + cudaGetErrorString(late) + ")";
    }
    return "";
}

namespace {

/// Errors that only say a graph capture broke; the cause is a stream or synchronisation misuse.
bool is_capture_error(cudaError_t e) {
    switch (e) {
        case cudaErrorStreamCaptureUnsupported:
        case cudaErrorStreamCaptureInvalidated:
        case cudaErrorStreamCaptureMerge:
        case cudaErrorStreamCaptureUnmatched:
        case cudaErrorStreamCaptureUnjoined:
        case cudaErrorStreamCaptureIsolation:
        case cudaErrorStreamCaptureImplicit:
        case cudaErrorCapturedEvent:
        case cudaErrorStreamCaptureWrongThread:
            return true;
        default:
            return false;
    }
}

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

const char* kCaptureMisuse =
    "while the grader captured a CUDA graph on its stream, the submission used the legacy default stream (or "
    "synchronised): launch only on the `stream` argument";

void set(LaunchReport& r, LaunchProblem kind, std::string problem) {
    if (r.kind != LaunchProblem::none) return;  // the first cause found explains the rest
    r.kind = kind;
    r.problem = std::move(problem);
}

/// Names the first cause, in this order: a launch the runtime refused, an error the entry point
/// returned, a launch error it swallowed, a launch on another stream, a capture it broke, and for
/// rows = 0 any launch at all. `pending` is the error left for cudaGetLastError after the call.
void diagnose_call(const std::vector<RecordedLaunch>& launches, cudaError_t returned, cudaError_t pending,
                   cudaStream_t expected, bool expect_empty, LaunchReport& r) {
    for (const RecordedLaunch& l : launches)
        if (l.result != cudaSuccess && !is_capture_error(l.result))
            set(r, LaunchProblem::launch_error,
                describe_failed_launch(l.shape, cudaGetErrorName(l.result), cudaGetErrorString(l.result),
                                       device_launch_limits(), expect_empty));
    if (returned != cudaSuccess && !is_capture_error(returned))
        set(r, LaunchProblem::launch_error, "the entry point returned " + error_text(returned));
    if (pending != cudaSuccess && !is_capture_error(pending) && !is_sticky(pending))
        set(r, LaunchProblem::launch_error,
            describe_swallowed_error(cudaGetErrorName(pending), cudaGetErrorString(pending), expect_empty));
    for (const RecordedLaunch& l : launches)
        if (l.stream != expected) set(r, LaunchProblem::stream, describe_wrong_stream(l.shape, describe_stream(l.stream)));
    if (is_capture_error(returned) || is_capture_error(pending)) set(r, LaunchProblem::stream, kCaptureMisuse);
    if (expect_empty && !launches.empty())
        set(r, LaunchProblem::launch_error,
            "rows = 0 must launch nothing, but the entry point launched a kernel (grid " +
                format_dim(launches.front().shape.grid) + ", block " + format_dim(launches.front().shape.block) + ")");
}

}  // namespace

LaunchReport run_launch(const std::function<cudaError_t(cudaStream_t)>& launch, bool capture, bool expect_empty,
                        const std::string& case_name) {
    LaunchReport report;
    cudaStream_t stream = grader_stream();
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaDeviceSynchronize());  // the fill kernels are done before anything the submission does
    scribble_shared_memory(stream);
    if (!capture) {
        LaunchRecording recording;
        const cudaError_t e = launch(stream);
        recording.stop();
        const cudaError_t pending = cudaPeekAtLastError();
        if (pending != cudaSuccess && !is_sticky(pending)) cudaGetLastError();
        diagnose_call(recording.launches(), e, is_sticky(pending) ? cudaSuccess : pending, stream, expect_empty,
                      report);
        const std::string err = wait_with_watchdog(stream, case_name);
        // Work sent to another stream must finish too before outputs are read; a hang there is still a hang.
        cudaDeviceSynchronize();
        cudaGetLastError();
        if (report.problem.empty() && !err.empty()) set(report, LaunchProblem::kernel_error, "the kernel failed: " + err);
        return report;
    }

    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    LaunchRecording recording;
    const cudaError_t e = launch(stream);
    recording.stop();
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    const cudaError_t pending = cudaGetLastError();
    diagnose_call(recording.launches(), e, pending, stream, expect_empty, report);
    if (end != cudaSuccess) set(report, LaunchProblem::stream, kCaptureMisuse);
    if (report.kind != LaunchProblem::none) {
        if (graph) cudaGraphDestroy(graph);
        cudaDeviceSynchronize();
        cudaGetLastError();
        return report;
    }
    WB_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &report.graph_nodes));
    if (expect_empty && report.graph_nodes != 0) {
        set(report, LaunchProblem::launch_error,
            "rows = 0 must launch nothing, but the call enqueued " + std::to_string(report.graph_nodes) +
                " operation(s) on the stream");
    } else if (!expect_empty && report.graph_nodes == 0) {
        // Work that ran eagerly elsewhere may already have written the outputs; the caller
        // re-checks them, but the launch itself is the bug. A launch the recorder saw on
        // another stream was named above, so here nothing reached any stream it could see.
        set(report, LaunchProblem::stream,
            recording.launches().empty()
                ? "the entry point returned cudaSuccess but nothing was launched on the `stream` argument (no kernel "
                  "launch was seen at all)"
                : "nothing was launched on the grader's stream: the kernel went to another stream (the default "
                  "stream, or one the submission made); launch on the `stream` argument");
    }
    cudaDeviceSynchronize();
    cudaGetLastError();
    if (report.problem.empty() && report.graph_nodes > 0) {
        cudaGraphExec_t exec = nullptr;
        const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
        if (inst != cudaSuccess) {
            cudaGetLastError();
            std::string why = "the captured launch could not be turned into a runnable graph: " + error_text(inst);
            for (const RecordedLaunch& l : recording.launches())
                if (!explain_launch_limits(l.shape, device_launch_limits()).empty()) {
                    why = describe_failed_launch(l.shape, cudaGetErrorName(inst), cudaGetErrorString(inst),
                                                 device_launch_limits(), false);
                    break;
                }
            set(report, LaunchProblem::launch_error, why);
        } else {
            scribble_shared_memory(stream);
            WB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
            const std::string err = wait_with_watchdog(stream, case_name);
            cudaGraphExecDestroy(exec);
            if (!err.empty()) set(report, LaunchProblem::kernel_error, "the kernel failed: " + err);
        }
    }
    cudaGraphDestroy(graph);
    return report;
}

}  // namespace workbook
