/// @file stream_gate.h
/// @brief Ordering two processes' GPU work through a word of shared device memory: one stream
///        writes a value (cuStreamWriteValue32), another waits until the word reaches it
///        (cuStreamWaitValue32). Remote timing uses it so the grader's own events bracket the
///        submission process's launches on the GPU, with no process hop inside the clock.
///
/// Why not CUDA IPC events: they are legacy CUDA IPC, which needs the two processes in one PID
/// namespace; the sandbox gives the submission its own. The shared word lives in memory already
/// shared the way the tensors are (CUDA VMM, exported as a file descriptor).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace workbook::remote {

/// The driver's stream memory operations, found through the runtime (no link to libcuda).
class StreamGate {
public:
    /// The gate of this process; `available()` says whether the driver has the operations.
    static const StreamGate& get();

    bool available() const { return wait_ != nullptr && write_ != nullptr; }
    /// Why the gate is not available ("" when it is).
    const std::string& why_not() const { return why_not_; }

    /// Work enqueued on `stream` after this waits until the 32-bit word at `word` is >= `value`
    /// (compared as a difference, so the count may wrap).
    void wait(cudaStream_t stream, void* word, uint32_t value) const;
    /// Writes `value` to the word at `word` once the work enqueued on `stream` before it is done.
    void write(cudaStream_t stream, void* word, uint32_t value) const;

private:
    void* wait_ = nullptr;   ///< cuStreamWaitValue32 (v2)
    void* write_ = nullptr;  ///< cuStreamWriteValue32 (v2)
    std::string why_not_;
};

}  // namespace workbook::remote
