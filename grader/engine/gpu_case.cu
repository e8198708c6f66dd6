/// @file gpu_case.cu
#include "engine/gpu_case.h"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <memory>
#include <utility>
#include <vector>

#include "engine/buffer_hooks.h"
#include "engine/device_stats.h"
#include "engine/launch_guard.h"
#include "engine/sampling_hooks.h"
#include "launch/launch_recorder.h"
#include "workbook/cuda_check.h"
#include "workbook/gate.h"

namespace workbook {
namespace {

bool g_tight_inputs = false;  ///< set_tight_inputs: inputs no output overwrites get no guard zone

bool is_overwritten(const GpuCall& call, size_t input);

/// The tensors of one call, with aliases resolved to their input's memory.
struct CallTensors {
    std::vector<std::shared_ptr<DeviceTensor>> owned;  // one per role; aliases share
    std::vector<void*> data;

    explicit CallTensors(const GpuCall& call) {
        for (const TensorRole& role : call.tensors) {
            if (role.alias_of >= 0) {
                owned.push_back(owned.at(role.alias_of));
            } else {
                const std::size_t guard = g_tight_inputs && role.is_input && !is_overwritten(call, owned.size()) ? 0
                                                                                                       : kGuardBytes;
                owned.push_back(
                    std::make_shared<DeviceTensor>(call.dtype_of(owned.size()), role.layout, role.misalign, guard));
            }
            data.push_back(owned.back()->data());
        }
    }

    /// Outputs poisoned again (remote timing: before every sample).
    void poison_outputs(const GpuCall& call, cudaStream_t stream) {
        for (size_t i = 0; i < call.tensors.size(); ++i)
            if (!call.tensors[i].is_input && call.tensors[i].alias_of < 0) poison_output(*owned[i], stream);
    }

    /// Output elements that still hold the poison's bits, added to the device counter `*count` on `stream`.
    void count_poisoned_outputs(const GpuCall& call, unsigned long long* count, cudaStream_t stream) {
        for (size_t i = 0; i < call.tensors.size(); ++i)
            // Scratch (lesson 10's workspace) is the submission's to use or not: only real outputs count.
            if (!call.tensors[i].is_input && !call.tensors[i].scratch && call.tensors[i].alias_of < 0)
                count_poisoned_async(*owned[i], count, stream);
    }

    void prepare(const GpuCall& call, cudaStream_t stream) {
        for (size_t i = 0; i < call.tensors.size(); ++i) {
            const TensorRole& role = call.tensors[i];
            if (role.is_input && role.fill) role.fill(*owned[i], stream);
            else if (role.is_input) fill_input(*owned[i], role.spec, stream);
            else if (role.alias_of < 0) poison_output(*owned[i], stream);
        }
    }
};

bool is_overwritten(const GpuCall& call, size_t input) {
    for (const TensorRole& r : call.tensors)
        if (r.alias_of == static_cast<int>(input)) return true;
    return false;
}

/// Checks every output against the oracle and everything around it; "" when all is right.
std::string check_call(const GpuCall& call, CallTensors& t, cudaStream_t stream) {
    std::string problems;
    for (size_t i = 0; i < call.tensors.size(); ++i) {
        const TensorRole& role = call.tensors[i];
        if (role.is_input) continue;
        if (!role.scratch && role.kind != OutputKind::external) {
            const CompareResult r = role.compare ? role.compare(*t.owned[i], stream)
                                                 : compare_output(call.problem, call.dtype, *t.owned[i], role.kind,
                                                                  role.extra_ulps, stream);
            if (r.bad) problems += describe_failure(r, role.name.c_str()) + ". ";
        }
        problems += check_untouched_outside(*t.owned[i], role.name.c_str(), stream);
    }
    if (call.check) {
        std::vector<const DeviceTensor*> all;
        for (const auto& owned : t.owned) all.push_back(owned.get());
        problems += call.check(all, stream);
    }
    for (size_t i = 0; i < call.tensors.size(); ++i) {
        const TensorRole& role = call.tensors[i];
        if (!role.is_input || !role.check_unchanged || is_overwritten(call, i)) continue;
        problems += role.check_input ? role.check_input(*t.owned[i], stream)
                                     : check_input_unchanged(*t.owned[i], role.spec, role.name.c_str(), stream);
    }
    return problems;
}

/// The owned elements' bytes of every compared output, row by row.
std::vector<std::vector<unsigned char>> output_bytes(const GpuCall& call, CallTensors& t, cudaStream_t stream) {
    std::vector<std::vector<unsigned char>> out(call.tensors.size());
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < call.tensors.size(); ++i) {
        const TensorRole& role = call.tensors[i];
        if (role.is_input || role.scratch) continue;
        const DeviceTensor& d = *t.owned[i];
        out[i].resize(d.span_bytes());
        if (!out[i].empty()) WB_CUDA_CHECK(cudaMemcpy(out[i].data(), d.data(), out[i].size(), cudaMemcpyDeviceToHost));
    }
    return out;
}

/// "" when every owned element of every output has the same bits in `a` and `b`; otherwise
/// the first output that changed, how many elements, and the first one's two values.
std::string compare_bytes(const GpuCall& call, CallTensors& t, const std::vector<std::vector<unsigned char>>& a,
                          const std::vector<std::vector<unsigned char>>& b, int launch) {
    for (size_t i = 0; i < call.tensors.size(); ++i) {
        if (a[i].empty()) continue;
        const DeviceTensor& d = *t.owned[i];
        const Layout& l = d.layout();
        const size_t size = dtype_size(d.dtype());
        uint64_t changed = 0;
        int64_t first_row = -1, first_col = -1;
        for (int64_t r = 0; r < l.rows; ++r)
            for (int64_t c = 0; c < l.cols; ++c) {
                const size_t at = static_cast<size_t>(l.offset(r, c)) * size;
                if (std::memcmp(&a[i][at], &b[i][at], size) != 0) {
                    if (changed++ == 0) first_row = r, first_col = c;
                }
            }
        if (changed == 0) continue;
        const size_t at = static_cast<size_t>(l.offset(first_row, first_col)) * size;
        auto value = [&](const std::vector<unsigned char>& bytes) {
            if (size == 4) {
                float f;
                std::memcpy(&f, &bytes[at], 4);
                return static_cast<double>(f);
            }
            uint16_t h;
            std::memcpy(&h, &bytes[at], 2);
            const uint32_t w = static_cast<uint32_t>(h) << 16;
            float f;
            std::memcpy(&f, &w, 4);
            if (d.dtype() == DType::bf16) return static_cast<double>(f);
            // fp16 from its bits: sign, 5-bit exponent, 10-bit mantissa.
            const int e = (h >> 10) & 0x1f;
            const double mant = h & 0x3ff;
            const double mag = e == 0 ? std::ldexp(mant, -24) : e == 31 ? (mant ? NAN : INFINITY)
                                                                       : std::ldexp(1024.0 + mant, e - 25);
            return (h & 0x8000) ? -mag : mag;
        };
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "not deterministic: launch %d on the same inputs changed %llu element(s) of %s, the first at "
                      "[row %lld, col %lld]: %.9g, then %.9g. The contract promises bit-identical results for the "
                      "same inputs on the same device: a floating-point atomicAdd, or any sum whose order depends on "
                      "which block finishes first, breaks that",
                      launch, static_cast<unsigned long long>(changed), call.tensors[i].name.c_str(),
                      static_cast<long long>(first_row), static_cast<long long>(first_col), value(a[i]), value(b[i]));
        return buf;
    }
    return "";
}

}  // namespace

double bytes_moved(const GpuCall& call) {
    double bytes = 0;
    for (size_t i = 0; i < call.tensors.size(); ++i) {
        const TensorRole& r = call.tensors[i];
        if (r.scratch) continue;
        const double elems = r.spec.per_col && r.is_input ? r.layout.cols : double(r.layout.rows) * r.layout.cols;
        bytes += elems * dtype_size(call.dtype_of(i));
    }
    return bytes;
}

void set_tight_inputs(bool on) { g_tight_inputs = on; }

CaseOutcome run_gpu_call(const GpuCall& call, bool capture, const std::string& case_name) {
    cudaStream_t stream = grader_stream();
    const SampledCallScope sampled(call);  // the CPU emulator may run a large call on a sample of blocks
    CallTensors t(call);
    t.prepare(call, stream);
    if (call.bind) {
        const std::string refused = call.bind(t.data);
        if (!refused.empty()) return CaseOutcome::fail(refused, FailureCause::launch);
    }
    const bool empty = call.problem.rows == 0 && !call.launches_when_empty;
    const auto launch_once = [&]() -> CaseOutcome {
        const LaunchReport launch =
            run_launch([&](cudaStream_t s) { return call.launch(t.data, s); }, capture, empty, case_name);
        if (launch.problem.empty()) return CaseOutcome::pass();
        const FailureCause cause = launch.kind == LaunchProblem::stream         ? FailureCause::stream
                                   : launch.kind == LaunchProblem::kernel_error ? FailureCause::kernel
                                                                                 : FailureCause::launch;
        return CaseOutcome::fail(launch.problem, cause);
    };
    CaseOutcome launched = launch_once();
    if (!launched.passed) return launched;
    const std::string problems = check_call(call, t, stream);
    if (!problems.empty()) return CaseOutcome::fail(problems);
    if (call.identical_reruns == 0) return CaseOutcome::pass();
    // Determinism: the outputs' bytes now, then after each later launch on the same inputs.
    std::vector<std::vector<unsigned char>> first = output_bytes(call, t, stream);
    for (int k = 1; k <= call.identical_reruns; ++k) {
        for (size_t i = 0; i < call.tensors.size(); ++i)
            if (!call.tensors[i].is_input && call.tensors[i].alias_of < 0) poison_output(*t.owned[i], stream);
        launched = launch_once();
        if (!launched.passed) return launched;
        const std::string differs = compare_bytes(call, t, first, output_bytes(call, t, stream), k + 1);
        if (!differs.empty()) return CaseOutcome::fail(differs);
    }
    return CaseOutcome::pass();
}

Case make_gpu_case(std::string name, std::string what, CallBuilder build, int repeats, bool large) {
    Case c;
    c.name = name;
    c.what = std::move(what);
    c.repeats = repeats;
    c.large = large;
    for (const TensorRole& r : build(0).tensors) c.elements = std::max(c.elements, r.layout.span());
    c.run = [name, build](uint64_t seed, int rep) {
        // Even repetitions go through a graph capture (catches other streams), odd ones launch directly.
        // Under remote grading the launch happens in another process, which no capture here can see.
        return run_gpu_call(build(seed), rep % 2 == 0 && !remote_grading(), name);
    };
    return c;
}

namespace {

/// Launches per timed sample for a call moving `bytes`: small shapes are timed over several
/// launches on distinct tensors, so the event resolution and launch gaps are amortised and
/// each launch still starts cold.
int sets_for(double bytes) {
    return bytes >= (64 << 20) ? 1 : static_cast<int>(std::min(32.0, std::ceil((64 << 20) / bytes)));
}

/// The copy that a benchmark row is compared with: one 16-byte word per thread, nothing else.
__global__ void copy_words(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t words) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
        dst[i] = src[i];
}

/// Median seconds per copy of `k` copies of `half` bytes each (on distinct buffers) per
/// event pair, L2 cleared before every sample; the first `warm` samples (clocks coming up
/// from idle) are dropped. `as_kernels`: copy_words launches captured into one CUDA graph,
/// exactly as a benchmark's launches are; otherwise cudaMemcpyAsync calls.
double timed_copy_seconds(size_t half, int k, int samples, int warm, bool as_kernels) {
    cudaStream_t stream = grader_stream();
    std::vector<void*> src(k), dst(k);
    for (int i = 0; i < k; ++i) {
        WB_CUDA_CHECK(cudaMalloc(&src[i], half));
        WB_CUDA_CHECK(cudaMalloc(&dst[i], half));
        WB_CUDA_CHECK(cudaMemsetAsync(src[i], 1, half, stream));
    }
    const size_t words = half / 16;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((words + 255) / 256, 2147483647u));
    auto copies = [&] {
        for (int i = 0; i < k; ++i) {
            if (as_kernels) {
                copy_words<<<blocks, 256, 0, stream>>>(static_cast<const uint4*>(src[i]), static_cast<uint4*>(dst[i]),
                                                       words);
                WB_CUDA_CHECK(cudaGetLastError());
            } else {
                WB_CUDA_CHECK(cudaMemcpyAsync(dst[i], src[i], half, cudaMemcpyDeviceToDevice, stream));
            }
        }
    };
    cudaGraphExec_t exec = nullptr;
    if (as_kernels) {
        WB_CUDA_CHECK(cudaStreamSynchronize(stream));
        WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        copies();
        cudaGraph_t graph = nullptr;
        WB_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        WB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        WB_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    cudaEvent_t start, stop;
    WB_CUDA_CHECK(cudaEventCreate(&start));
    WB_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> times(static_cast<size_t>(samples));
    for (int s = 0; s < warm + samples; ++s) {
        clear_l2(stream);
        WB_CUDA_CHECK(cudaEventRecord(start, stream));
        if (exec) {
            WB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        } else {
            copies();
        }
        WB_CUDA_CHECK(cudaEventRecord(stop, stream));
        WB_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        WB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (s >= warm) times[static_cast<size_t>(s - warm)] = ms * 1e-3 / k;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (exec) cudaGraphExecDestroy(exec);
    for (int i = 0; i < k; ++i) {
        cudaFree(src[i]);
        cudaFree(dst[i]);
    }
    return median(std::move(times));
}

}  // namespace

double copy_bandwidth_gbps() {
    static double measured = 0;
    const size_t half = size_t(1) << 30;
    if (measured == 0) measured = gbps(2.0 * static_cast<double>(half), timed_copy_seconds(half, 1, 20, 5, false));
    return measured;
}

double copy_bandwidth_gbps(double bytes) {
    static std::map<double, double> measured;
    auto it = measured.find(bytes);
    if (it != measured.end()) return it->second;
    // Half the bytes are read and half written, rounded to whole 16-byte words.
    const size_t half = std::max<size_t>(16, static_cast<size_t>(bytes / 2) / 16 * 16);
    const double result = gbps(2.0 * static_cast<double>(half), timed_copy_seconds(half, sets_for(bytes), 20, 3, true));
    measured[bytes] = result;
    return result;
}

namespace {

/// One side (student or reference) of a benchmark: rotating tensor sets and a graph over them.
class TimedCall {
public:
    TimedCall(const CallBuilder& build, uint64_t seed) {
        const GpuCall first = build(seed);
        const int sets = remote_grading() ? remote_sets(bytes_moved(first)) : sets_for(bytes_moved(first));
        group_ = sets_for(bytes_moved(first));
        cudaStream_t stream = grader_stream();
        for (int i = 0; i < sets; ++i) {
            calls_.push_back(build(seed));
            tensors_.push_back(std::make_unique<CallTensors>(calls_.back()));
            tensors_.back()->prepare(calls_.back(), stream);
            if (calls_.back().bind) {
                const std::string refused = calls_.back().bind(tensors_.back()->data);
                if (!refused.empty()) throw std::runtime_error(refused);
            }
        }
        WB_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (remote_grading()) return;
        WB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        cudaError_t launched = cudaSuccess;
        for (int i = 0; i < sets && launched == cudaSuccess; ++i) launched = calls_[i].launch(tensors_[i]->data, stream);
        cudaGraph_t graph = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
        cudaGetLastError();
        if (launched != cudaSuccess || ended != cudaSuccess)
            throw std::runtime_error("the launch could not be captured into a CUDA graph on the grader's stream");
        size_t nodes = 0;
        WB_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
        if (nodes == 0) throw std::runtime_error("nothing was launched on the grader's stream");
        WB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
        WB_CUDA_CHECK(cudaGraphDestroy(graph));
        WB_CUDA_CHECK(cudaEventCreate(&start_));
        WB_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    ~TimedCall() {
        if (exec_) cudaGraphExecDestroy(exec_);
        if (start_) cudaEventDestroy(start_);
        if (stop_) cudaEventDestroy(stop_);
    }

    /// One cold sample: seconds per launch.
    double sample(const std::string& what) {
        cudaStream_t stream = grader_stream();
        if (remote_grading()) return remote_sample(stream);
        clear_l2(stream);
        WB_CUDA_CHECK(cudaEventRecord(start_, stream));
        WB_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
        WB_CUDA_CHECK(cudaEventRecord(stop_, stream));
        const std::string err = wait_with_watchdog(stream, what);
        if (!err.empty()) throw std::runtime_error(what + ": " + err);
        float ms = 0;
        WB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms * 1e-3 / static_cast<double>(calls_.size());
    }

    /// Checks the outputs of every set the timed launches wrote.
    std::string verify() {
        for (size_t i = 0; i < calls_.size(); ++i) {
            const std::string p = check_call(calls_[i], *tensors_[i], grader_stream());
            if (!p.empty()) return p;
        }
        return "";
    }

private:
    /// Under remote grading: tensor sets per sample. Every timed launch gets a set of its own, with
    /// outputs poisoned before the sample and checked after it, so a launch that was not made shows;
    /// enough of them that a sample lasts about two milliseconds (the round trip between the
    /// processes, tens of microseconds, stays a small part of it), within 8 GiB.
    static int remote_sets(double bytes) {
        const double wanted = std::ceil(6e9 / bytes), room = std::floor(8e9 / bytes);
        return static_cast<int>(std::max(1.0, std::min({wanted, room, 256.0})));
    }

    /// One sample under remote grading. The other process queues the batch; then, on the grader's
    /// stream, every set's outputs are poisoned, and the launches are timed in groups as the
    /// one-process timing takes them (sets_for: one launch of 64 MiB or more, up to 32 smaller ones),
    /// L2 cleared before each group (remote_student.cu says how the clock works). Right behind the
    /// last group the outputs still poisoned are counted, so a launch that ends after its clock
    /// stopped cannot pass unseen. A launch run early (before the poison) leaves its output
    /// poisoned; one run during the grader's own work between the clocks lengthens that work, and
    /// the excess over its shortest time is added to the sample. The sample is the median group.
    double remote_sample(cudaStream_t stream) {
        WB_CUDA_CHECK(cudaStreamSynchronize(stream));
        buffer_hooks().begin_batch();
        cudaError_t launched = cudaSuccess;
        for (size_t i = 0; i < calls_.size() && launched == cudaSuccess; ++i) {
            launched = calls_[i].launch(tensors_[i]->data, stream);
            if (buffer_hooks().mark_launch) buffer_hooks().mark_launch();
        }
        StatsBuffer unwritten(stream);
        TimedBatch batch;
        batch.group = group_;
        batch.before_clock = [this](cudaStream_t s) {
            for (size_t i = 0; i < calls_.size(); ++i) tensors_[i]->poison_outputs(calls_[i], s);
        };
        // The reset waits for the context, so it comes now, not under the hold: evict-last lines a
        // group leaves are reset at the next sample, not the next group.
        reset_l2_priorities();
        batch.before_each = [](cudaStream_t s) { write_l2_clear(s); };
        batch.after_clock = [this, &unwritten](cudaStream_t s) {
            for (size_t i = 0; i < calls_.size(); ++i) tensors_[i]->count_poisoned_outputs(calls_[i], &unwritten.get()->bad, s);
        };
        buffer_hooks().end_batch(stream, batch);
        if (launched != cudaSuccess) throw std::runtime_error(std::string("a timed launch returned ") + cudaGetErrorName(launched));
        const size_t left = static_cast<size_t>(unwritten.read().bad);
        if (left)
            throw std::runtime_error("a timed launch left " + std::to_string(left) +
                                     " output element(s) unwritten: not every launch the time covers was made, or it "
                                     "finished after the clock stopped");
        // Two sets, chosen only now, are checked in full against the oracle.
        std::random_device pick;
        for (int k = 0; k < 2; ++k) {
            const size_t i = pick() % calls_.size();
            const std::string p = check_call(calls_[i], *tensors_[i], stream);
            if (!p.empty()) throw std::runtime_error("a timed launch wrote a wrong output: " + p);
        }
        std::vector<double> per_launch;
        for (size_t g = 0; g < batch.group_seconds.size(); ++g)
            per_launch.push_back(batch.group_seconds[g] / std::max(1, batch.group_launches[g]));
        if (per_launch.empty()) throw std::runtime_error("the timed batch measured nothing");
        double seconds = median(per_launch);
        if (batch.clock == "grouped") {  // "stream" (one group, the clock before) adds nothing, as it did
            if (shortest_own_ == 0 || batch.own_seconds < shortest_own_) shortest_own_ = batch.own_seconds;
            seconds += (batch.own_seconds - shortest_own_) / static_cast<double>(calls_.size());
        }
        return seconds;
    }

    std::vector<GpuCall> calls_;
    std::vector<std::unique_ptr<CallTensors>> tensors_;
    int group_ = 1;             ///< remote: launches per timed group, as sets_for gives the one-process timing
    double shortest_own_ = 0;  ///< remote "grouped" clock: the grader's own work between the clocks, fastest seen
    cudaGraphExec_t exec_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

int profile_launch(const CallBuilder& build) {
    cudaStream_t stream = grader_stream();
    const GpuCall call = build(0x5eed5eedull);
    const SampledCallScope sampled(call);  // the CPU emulator's traffic report runs it on sampled blocks
    CallTensors t(call);
    t.prepare(call, stream);
    if (call.bind) {
        const std::string refused = call.bind(t.data);
        if (!refused.empty()) throw std::runtime_error(refused);
    }
    WB_CUDA_CHECK(cudaDeviceSynchronize());
    LaunchRecording recording;
    WB_CUDA_CHECK(cudaProfilerStart());
    const cudaError_t e = call.launch(t.data, stream);
    const std::string err = wait_with_watchdog(stream, "the profiled launch");
    WB_CUDA_CHECK(cudaProfilerStop());
    recording.stop();
    if (e != cudaSuccess) throw std::runtime_error(std::string("the launch failed: ") + cudaGetErrorName(e));
    if (!err.empty()) throw std::runtime_error("the kernel failed: " + err);
    return static_cast<int>(recording.launches().size());
}

BenchShape make_bench_shape(std::string shape, DType dtype, CallBuilder student, CallBuilder reference) {
    BenchShape b;
    b.profile_once = [student, reference](bool mine) { return profile_launch(mine ? student : reference); };
    b.shape = std::move(shape);
    b.dtype = dtype_name(dtype);
    b.bytes = bytes_moved(reference(1));
    // Built on first use, so a shape costs memory only while it is being timed.
    auto s = std::make_shared<std::unique_ptr<TimedCall>>();
    auto r = std::make_shared<std::unique_ptr<TimedCall>>();
    const std::string label = "benchmark " + b.shape + " " + b.dtype;
    b.time_student = [s, student, label] {
        if (!*s) *s = std::make_unique<TimedCall>(student, 0x5eed5eedull);
        return (*s)->sample(label + " (your kernel)");
    };
    b.time_reference = [r, reference, label] {
        if (!*r) *r = std::make_unique<TimedCall>(reference, 0x5eed5eedull);
        return (*r)->sample(label + " (reference)");
    };
    b.verify_student = [s, r] {
        std::string p = *s ? (*s)->verify() : "";
        s->reset();
        r->reset();
        return p;
    };
    return b;
}

}  // namespace workbook
