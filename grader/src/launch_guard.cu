/// @file launch_guard.cu
#include "launch_guard.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "gpu_checks.h"
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

LaunchReport run_launch(const std::function<cudaError_t(cudaStream_t)>& launch, bool capture, bool expect_empty,
                        const std::string& case_name) {
    LaunchReport report;
    cudaStream_t stream = grader_stream();
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaDeviceSynchronize());  // the fill kernels are done before anything the submission does
    scribble_shared_memory(stream);
    if (!capture) {
        const cudaError_t e = launch(stream);
        if (e != cudaSuccess) {
            report.problem = std::string("the entry point returned ") + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")";
            const std::string crash = wait_with_watchdog(stream, case_name);
            (void)crash;
            cudaDeviceSynchronize();
            cudaGetLastError();
            return report;
        }
        const std::string err = wait_with_watchdog(stream, case_name);
        // Work sent to another stream must finish too before outputs are read; a hang there is still a hang.
        cudaDeviceSynchronize();
        if (!err.empty()) report.problem = "the kernel failed: " + err;
        return report;
    }

    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t e = launch(stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    cudaGetLastError();
    if (e != cudaSuccess || end != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        cudaDeviceSynchronize();
        cudaGetLastError();
        if (end == cudaErrorStreamCaptureInvalidated || e == cudaErrorStreamCaptureImplicit ||
            e == cudaErrorStreamCaptureUnsupported)
            report.problem = "while the grader captured a CUDA graph on its stream, the submission used the legacy "
                             "default stream (or synchronised): launch only on the `stream` argument";
        else
            report.problem = std::string("the entry point returned ") + cudaGetErrorName(e != cudaSuccess ? e : end) +
                             " during graph capture";
        return report;
    }
    WB_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &report.graph_nodes));
    if (expect_empty && report.graph_nodes != 0) {
        report.problem = "rows = 0 must launch nothing, but the call enqueued " + std::to_string(report.graph_nodes) +
                         " operation(s) on the stream";
    } else if (!expect_empty && report.graph_nodes == 0) {
        // Work that ran eagerly elsewhere may already have written the outputs; the caller
        // re-checks them, but the launch itself is the bug.
        report.problem = "nothing was launched on the grader's stream: the kernel went to another stream "
                         "(the default stream, or one the submission made); launch on the `stream` argument";
    }
    cudaDeviceSynchronize();
    cudaGetLastError();
    if (report.problem.empty() && report.graph_nodes > 0) {
        cudaGraphExec_t exec = nullptr;
        WB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        scribble_shared_memory(stream);
        WB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        const std::string err = wait_with_watchdog(stream, case_name);
        cudaGraphExecDestroy(exec);
        if (!err.empty()) report.problem = "the kernel failed: " + err;
    }
    cudaGraphDestroy(graph);
    return report;
}

}  // namespace workbook
