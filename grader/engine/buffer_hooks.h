/// @file buffer_hooks.h
/// @brief Where the grader's tensors get their memory, and how a timed batch is run: plain
///        allocations in one process, or memory shared with the process that holds the
///        submission's code (remote grading, `wb-grader --remote-student`).
///
/// Header only, with the one-process behaviour as the default, so every build of the grader
/// (the emulated one too) keeps working unchanged; remote grading installs its hooks at start.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "workbook/cuda_check.h"

namespace workbook {

/// A timed batch of remote calls: the grader's own work on each side of the clock, and what it measured.
struct TimedBatch {
    /// Launches per timed group (the one-process timing's launches per event pair); the batch's
    /// launches (TimedCall's, marked with BufferHooks::mark_launch) are timed group by group.
    int group = 1;
    /// Enqueued on the grader's stream before the clock starts (outputs poisoned).
    std::function<void(cudaStream_t)> before_clock;
    /// Enqueued on the grader's stream before each group's clock (L2 cleared).
    std::function<void(cudaStream_t)> before_each;
    /// Enqueued on the grader's stream right after the last clock stops (what the launches left unwritten).
    std::function<void(cudaStream_t)> after_clock;
    /// Per group: its seconds by the grader's clock (less the gate's own calibrated time) and its launches.
    std::vector<double> group_seconds;
    std::vector<int> group_launches;
    double own_seconds = 0;  ///< "stream": the grader's own work between the clocks (poison, L2 clears)
    std::string clock;       ///< "stream" (the grader's events, the other process gated on the GPU) or "wall"
};

/// Set by remote grading; empty members mean the one-process defaults.
struct BufferHooks {
    void* (*allocate)(std::size_t bytes, bool device) = nullptr;  ///< memory the other process can map
    void (*release)(void* p, bool device) = nullptr;
    /// Remote grading: calls made between begin_batch and end_batch are sent together and run back to
    /// back in the other process; end_batch runs the batch's grader-side work and fills its timing.
    void (*begin_batch)() = nullptr;
    void (*mark_launch)() = nullptr;  ///< one launch's calls end here (a call may take several)
    void (*end_batch)(cudaStream_t stream, TimedBatch& batch) = nullptr;
    std::string clock_used;  ///< the clock of the latest timed batch (TimedBatch::clock), for the report
    double gate_seconds = 0;  ///< "stream": the gate's own time, calibrated and taken off every group
};

/// The hooks in force (one per process).
inline BufferHooks& buffer_hooks() {
    static BufferHooks hooks;
    return hooks;
}

/// True when the submission runs in another process.
inline bool remote_grading() { return buffer_hooks().begin_batch != nullptr; }

/// Device memory for a tensor the submission sees.
inline void* allocate_device(std::size_t bytes) {
    if (buffer_hooks().allocate) return buffer_hooks().allocate(bytes, true);
    void* p = nullptr;
    WB_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}
inline void release_device(void* p) {
    if (buffer_hooks().release) buffer_hooks().release(p, true);
    else cudaFree(p);
}

/// Plain host memory (never null: bad_alloc), what allocate_host gives without hooks.
inline void* plain_host_allocation(std::size_t bytes) {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
}

/// Host memory for a tensor the submission sees (lesson 1).
inline void* allocate_host(std::size_t bytes) {
    if (buffer_hooks().allocate) return buffer_hooks().allocate(bytes, false);
    return plain_host_allocation(bytes);
}
inline void release_host(void* p) {
    if (buffer_hooks().release) buffer_hooks().release(p, false);
    else std::free(p);
}

/// A host array of `n` T from allocate_host, freed with the object.
template <typename T>
class HostArray {
public:
    explicit HostArray(std::size_t n, T value = T()) : n_(n), p_(static_cast<T*>(allocate_host(n * sizeof(T)))) {
        for (std::size_t i = 0; i < n; ++i) p_[i] = value;
    }
    ~HostArray() { release_host(p_); }
    HostArray(const HostArray&) = delete;
    HostArray& operator=(const HostArray&) = delete;
    T* data() { return p_; }
    const T* data() const { return p_; }
    std::size_t size() const { return n_; }
    T& operator[](std::size_t i) { return p_[i]; }
    const T& operator[](std::size_t i) const { return p_[i]; }

private:
    std::size_t n_;
    T* p_;
};

}  // namespace workbook
