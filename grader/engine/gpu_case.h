/// @file gpu_case.h
/// @brief The engine shared by every GPU lesson: tensors, the launch, and every check after it.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/case_registry.h"
#include "engine/gpu_checks.h"
#include "engine/l2_clear.h"

namespace workbook {

/// One tensor of a call: an input (filled from `spec`) or an output (poisoned), or an
/// output that shares an input's memory (`alias_of`, the in-place forms).
struct TensorRole {
    std::string name;
    Layout layout;
    int64_t misalign = 0;
    bool is_input = true;
    ValueSpec spec;                ///< inputs only
    int alias_of = -1;             ///< index of the input this output overwrites in place
    OutputKind kind = OutputKind::normalised;
    int extra_ulps = 0;
    bool check_unchanged = true;  ///< inputs only: false where the call's own producer rewrites it
    std::optional<DType> dtype;   ///< how this tensor is stored, when not the call's dtype (lesson 9)
    /// Lesson 10, where the problem's ValueSpec and OracleProblem cannot say it: how this input is
    /// filled and checked unchanged ("" when it is), or how this output is compared. Unset elsewhere.
    std::function<void(const DeviceTensor&, cudaStream_t)> fill;
    std::function<std::string(const DeviceTensor&, cudaStream_t)> check_input;
    std::function<CompareResult(const DeviceTensor&, cudaStream_t)> compare;
    /// A workspace (lesson 10): poisoned before each launch, never compared, not counted in the
    /// bytes; only its guard zones are checked.
    bool scratch = false;
};

/// A fully described call: the oracle's problem, the tensors, and how to call the submission.
struct GpuCall {
    DType dtype = DType::f32;
    OracleProblem problem;
    std::vector<TensorRole> tensors;
    /// Calls the submission with the tensors' data pointers, in `tensors` order.
    std::function<cudaError_t(const std::vector<void*>& data, cudaStream_t stream)> launch;
    /// Optional: called once with the tensors' pointers before the first launch, outside any
    /// capture (lesson 9 creates its descriptor here). A non-empty answer fails the case with
    /// that message and cause `launch`.
    std::function<std::string(const std::vector<void*>& data)> bind;
    /// rows = 0 still enqueues work (lesson 10 zeroes dweight); elsewhere it must launch nothing.
    bool launches_when_empty = false;
    /// Launches again this many times on the same inputs after the checks pass; every output must
    /// be bit-identical to the first launch's (lesson 10's determinism promise).
    int identical_reruns = 0;
    /// Optional: checks the outputs whose kind is OutputKind::external (lesson 11 judges q and
    /// scale together), given every tensor in `tensors` order; "" when they are right.
    std::function<std::string(const std::vector<const DeviceTensor*>& tensors, cudaStream_t stream)> check;
    /// The launch runs grader kernels that write the call's tensors (new inputs between two calls,
    /// lesson 7's producer): the CPU emulator, which does not watch the grader's own kernels, then
    /// runs the call whole rather than on a sample of blocks (grader/app/emulated_sampling.cpp).
    bool grader_writes = false;

    /// How tensor `i` is stored.
    DType dtype_of(size_t i) const { return tensors[i].dtype.value_or(dtype); }
};

/// Builds the call for one repetition's seed.
using CallBuilder = std::function<GpuCall(uint64_t seed)>;

/// On the CPU emulator (wb-grader-emu) the inputs no output overwrites are allocated with no guard zone:
/// their data is the whole allocation, and the emulator checks every access against its allocation, so a
/// read one element before or past an input (a loop bound one too far, a vector loaded whole past the
/// row's end) is an illegal address instead of a read of the guard's bytes. On a GPU the guard zones stay:
/// they catch writes past an input, which only compute-sanitizer would see in a tight allocation.
void set_tight_inputs(bool on);

/// Runs the call once: fill, poison, launch (captured into a graph when `capture`), compare every
/// output with the oracle, check guard zones, padding and unchanged inputs.
CaseOutcome run_gpu_call(const GpuCall& call, bool capture, const std::string& case_name);

/// A Case that runs `build` `repeats` times with fresh seeds, alternating captured and direct launches.
Case make_gpu_case(std::string name, std::string what, CallBuilder build, int repeats = 2, bool large = false);

/// A benchmark shape timing `student` and `reference` builds of the same call, with `sets`
/// rotating copies of the tensors so that tiny shapes are timed over many cold launches.
BenchShape make_bench_shape(std::string shape, DType dtype, CallBuilder student, CallBuilder reference);

/// Builds the call, fills its tensors, then launches it once inside a cudaProfilerStart/Stop range
/// (what Nsight Compute's --profile-from-start off profiles); returns the kernels it launched.
int profile_launch(const CallBuilder& build);

/// Bytes one call moves: each input read once and each output written once.
double bytes_moved(const GpuCall& call);

/// The device's copy bandwidth (GB/s, read + write), measured once per process on large cold copies.
double copy_bandwidth_gbps();

/// GB/s of a copy kernel moving `bytes` (read + write), timed the way a benchmark shape of
/// that many bytes is: L2 cleared before each sample, the same launches per sample, captured
/// into a CUDA graph. The roofline at that size, launch and last wave included; measured
/// once per size.
double copy_bandwidth_gbps(double bytes);

}  // namespace workbook
