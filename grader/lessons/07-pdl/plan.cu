/// @file lesson_pdl.cu
/// @brief Cases and the chain benchmark of lesson 7, programmatic dependent launch.
///
/// Correctness: besides ordinary cases, the submission runs right after a producer kernel that
/// releases its dependents at once and writes x only after a long pause. A kernel launched with
/// the PDL attribute that reads x before its grid-dependency wait reads the stale x and fails.
/// Timing: a decode-size chain (producer -> rmsnorm -> consumer, many layers, one CUDA graph)
/// with use_pdl on and off for the norm (producer and consumer use PDL in both); the
/// submission's chain must be measurably faster with it on.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>

#include "engine/gpu_case.h"
#include "engine/launch_guard.h"
#include "engine/poison.h"
#include "lessons/common/plan_helpers.h"
#include "lessons/common/repeat_call.h"
#include "workbook/cuda_check.h"
#include "workbook/gate.h"
#include "lessons/07-pdl/api.h"

namespace workbook {
namespace {

using PdlCall = std::function<cudaError_t(const void* x, const void* w, void* y, int64_t rows, int64_t cols, float eps,
                                          bool use_pdl, cudaStream_t)>;

template <typename T>
PdlCall typed(api::PdlFn<T> fn) {
    return [fn](const void* x, const void* w, void* y, int64_t rows, int64_t cols, float eps, bool pdl, cudaStream_t s) {
        return fn(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), rows, cols, eps, pdl, s);
    };
}

PdlCall pdl_fn(const Submission& s, DType t) {
    return typed_entry(s.table<api::Lesson7>(), t, [](auto fn) { return typed(fn); });
}

__device__ __forceinline__ void release_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_prerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets its dependents launch at once, then pauses, then writes the real x. With `y` it is
/// still using y until it finishes: an element of y that is no longer the poison the grader put
/// there was written before the dependent's grid-dependency wait, and the producer then writes
/// NaN in that element of x, so the row comes out wrong.
template <typename T>
__global__ void late_producer_kernel(T* x, const T* y, Layout layout, ValueSpec spec) {
    release_dependents();
    for (int i = 0; i < 300; ++i) __nanosleep(1000);  // about 0.3 ms: far longer than any dependent's start
    const int64_t n = layout.rows * layout.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t at = layout.offset(i / layout.cols, i % layout.cols);
        float v = raw_value(spec, i / layout.cols, i % layout.cols, layout.cols);
        if (y && !is_poison(y[at])) v = quiet_nan();
        x[at] = Elem<T>::from_float(v);
    }
}

void launch_late_producer(DType t, void* x, const void* y, const Layout& layout, const ValueSpec& spec,
                          cudaStream_t s) {
    switch (t) {
        case DType::f32:
            late_producer_kernel<<<64, 256, 0, s>>>(static_cast<float*>(x), static_cast<const float*>(y), layout, spec);
            break;
        case DType::f16:
            late_producer_kernel<<<64, 256, 0, s>>>(static_cast<__half*>(x), static_cast<const __half*>(y), layout,
                                                    spec);
            break;
        case DType::bf16:
            late_producer_kernel<<<64, 256, 0, s>>>(static_cast<__nv_bfloat16*>(x),
                                                    static_cast<const __nv_bfloat16*>(y), layout, spec);
            break;
    }
}

struct PdlCase {
    std::string name, what;
    int64_t rows, cols;
    bool use_pdl = true;
    bool late_producer = false;
    int64_t misalign = 0;
    InputKind kind = InputKind::normal;
    float eps = 1e-5f;
    bool f16_only = false;
    int repeats = 2;
    bool producer_owns_y = false;        ///< the late producer still uses y: y must wait for the wait too
    int64_t x_mis = 0, w_mis = 0, y_mis = 0;  ///< one tensor's own misalignment, on top of `misalign`
    bool repeat_call = false;            ///< called twice at the same addresses, new inputs in between
};

GpuCall pdl_call(const PdlCase& c, DType dtype, uint64_t seed, const PdlCall& fn) {
    GpuCall call;
    call.dtype = dtype;
    OracleProblem& p = call.problem;
    p.rows = c.rows;
    p.cols = c.cols;
    p.eps = c.eps;
    p.x = input_spec(c.kind, seed, 0, c.rows);
    p.weight = weight_spec(seed);
    const Layout rows = Layout::rows_of(c.rows, c.cols, c.cols);
    TensorRole x{"x", rows, c.misalign + c.x_mis, true, p.x};
    if (c.late_producer) {
        x.spec = input_spec(c.kind, seed ^ 0xbadull, 0, c.rows);  // stale until the producer writes
        x.check_unchanged = false;
    }
    call.tensors = {x, TensorRole{"weight", Layout::rows_of(1, c.cols, c.cols), c.misalign + c.w_mis, true, p.weight},
                    TensorRole{"y", rows, c.misalign + c.y_mis, false}};
    call.grader_writes = c.late_producer;  // the producer writes x (and y) inside the launch
    const PdlCase kase = c;
    const ValueSpec real = p.x;
    call.launch = [fn, kase, dtype, rows, real](const std::vector<void*>& d, cudaStream_t s) {
        if (kase.late_producer && kase.rows > 0)
            launch_late_producer(dtype, d[0], kase.producer_owns_y ? d[2] : nullptr, rows, real, s);
        return fn(d[0], d[1], d[2], kase.rows, kase.cols, kase.eps, kase.use_pdl, s);
    };
    return c.repeat_call ? repeated_at_same_addresses(std::move(call)) : call;
}

/// The cases lesson 7 adds to its first ones: the rest of the contract's sizes and numerics,
/// the eps argument, repeated calls, y left alone until the wait, and the alignment rule one
/// pointer at a time.
std::vector<PdlCase> contract_cases() {
    std::vector<PdlCase> v;
    auto add = [&v](PdlCase c) { v.push_back(std::move(c)); };
    add({"cols_lt_warp", "19 columns: fewer than a warp's lanes", 1000, 19});
    add({"cols_gt_1024xwidth", "9000 columns: more than 1024 threads x vector width", 200, 9000});
    add({"cols_max_65536", "65536 columns, the contract's longest row", 64, 65536});
    add({"short_rows_partial_block", "1001 rows of 256 columns: a block of several rows ends part-way", 1001, 256});
    PdlCase zero{"all_zero_rows", "every other row is all zeros: outputs 0, not NaN", 1000, 1024};
    zero.kind = InputKind::zero_rows;
    add(zero);
    PdlCase nan{"nan_row_isolated", "a NaN in row 37 must not leak into other rows", 100, 2048};
    nan.kind = InputKind::nan_row;
    add(nan);
    PdlCase huge{"fp16_huge_values", "fp16 values near 65504: squares overflow an fp16 accumulator", 256, 4096};
    huge.kind = InputKind::huge;
    huge.f16_only = true;
    add(huge);
    // A sum that skips the row's last vector is off by far more than the tolerance only when that vector
    // matters: the last element is 256, the rest below 2 (fp32 rows this long take the tail loop).
    PdlCase last{"outlier_last_col_long_rows",
                 "65536 columns whose last element is 256: the sum of squares must reach the row's end", 4, 65536};
    last.kind = InputKind::outlier_last;
    add(last);
    PdlCase eps{"eps_inside_sqrt", "small values with eps = 1e-2: the eps argument, inside the square root", 300, 512};
    eps.kind = InputKind::small;
    eps.eps = 1e-2f;
    add(eps);
    PdlCase big{"past_2pow31_elements", "rows x cols past 2^31 elements: 64-bit indexing", 32769, 65536};
    big.f16_only = true;
    big.repeats = 1;
    add(big);
    PdlCase owns_y{"pdl_y_untouched_before_wait",
                   "after a producer that releases its dependents early, writes x late and uses y until it finishes: "
                   "y is written only after the grid-dependency wait",
                   64, 4096, true, true};
    owns_y.producer_owns_y = true;
    add(owns_y);
    PdlCase repeat{"repeat_new_inputs_same_addresses",
                   "called twice with use_pdl on the same tensors, new values written between the calls: the second "
                   "call's outputs must be those of the new inputs",
                   64, 4096};
    repeat.repeat_call = true;
    add(repeat);
    for (const char* t : {"x", "weight", "y"}) {
        PdlCase mis{std::string("layout_") + t + "_base_misaligned",
                    std::string(t) + " one element past an aligned address, every other pointer aligned", 96, 2048};
        (t[0] == 'x' ? mis.x_mis : t[0] == 'w' ? mis.w_mis : mis.y_mis) = 1;
        add(mis);
    }
    return v;
}

// --- the decode chain -------------------------------------------------------------------

/// x = 0.5 z + 0.1: stands for the layer's work before the norm.
template <typename T>
__global__ void chain_producer(const T* z, T* x, int64_t n) {
    wait_for_prerequisites();
    release_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = Elem<T>::from_float(0.5f * Elem<T>::to_float(z[i]) + 0.1f);
}

/// z = 0.9 y: stands for the layer's work after the norm.
template <typename T>
__global__ void chain_consumer(const T* y, T* z, int64_t n) {
    wait_for_prerequisites();
    release_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        z[i] = Elem<T>::from_float(0.9f * Elem<T>::to_float(y[i]));
}

template <typename Kernel, typename... Args>
cudaError_t launch_maybe_pdl(Kernel kernel, unsigned blocks, bool pdl, cudaStream_t s, Args... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(256);
    config.stream = s;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attr;
    config.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

constexpr int kLayers = 32;

/// One chain of kLayers layers in a CUDA graph, with its buffers.
class Chain {
public:
    /// `norm_pdl` is the norm's use_pdl; the producer and consumer always use PDL, so a chain
    /// with and without `norm_pdl` differ only in what the submission does with the flag.
    Chain(const PdlCall& fn, DType t, int64_t rows, int64_t cols, bool norm_pdl) : n_(rows * cols) {
        const size_t bytes = n_ * dtype_size(t);
        for (void** p : {&x_, &y_, &z_}) WB_CUDA_CHECK(cudaMalloc(p, bytes));
        WB_CUDA_CHECK(cudaMalloc(&w_, cols * dtype_size(t)));
        cudaStream_t s = grader_stream();
        // Fill z and w with the grader's values so the chain computes on real numbers.
        const ValueSpec zs = input_spec(InputKind::normal, 99, 0, rows), ws = weight_spec(99);
        fill_plain(t, z_, rows, cols, zs, s);
        fill_plain(t, w_, 1, cols, ws, s);
        WB_CUDA_CHECK(cudaStreamSynchronize(s));
        const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n_ + 255) / 256, 1024));
        WB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        cudaError_t e = cudaSuccess;
        for (int layer = 0; layer < kLayers && e == cudaSuccess; ++layer) {
            e = launch_element(t, true, blocks, true, s);
            if (e == cudaSuccess) e = fn(x_, w_, y_, rows, cols, 1e-5f, norm_pdl, s);
            if (e == cudaSuccess) e = launch_element(t, false, blocks, true, s);
        }
        cudaGraph_t graph = nullptr;
        const cudaError_t end = cudaStreamEndCapture(s, &graph);
        cudaGetLastError();
        if (e != cudaSuccess || end != cudaSuccess)
            throw std::runtime_error(std::string("the chain could not be captured: ") +
                                     cudaGetErrorName(e != cudaSuccess ? e : end));
        WB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
        WB_CUDA_CHECK(cudaGraphDestroy(graph));
        WB_CUDA_CHECK(cudaEventCreate(&start_));
        WB_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    ~Chain() {
        if (device_hung()) return;  // every call below would wait on the hung kernel
        cudaGraphExecDestroy(exec_);
        for (void* p : {x_, y_, z_, w_}) cudaFree(p);
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    /// Seconds per layer of one replay of the whole chain.
    double sample() {
        cudaStream_t s = grader_stream();
        clear_l2(s);
        WB_CUDA_CHECK(cudaEventRecord(start_, s));
        WB_CUDA_CHECK(cudaGraphLaunch(exec_, s));
        WB_CUDA_CHECK(cudaEventRecord(stop_, s));
        const std::string err = wait_with_watchdog(s, "the PDL chain");
        if (!err.empty()) throw std::runtime_error("the PDL chain failed: " + err);
        float ms = 0;
        WB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms * 1e-3 / kLayers;
    }

private:
    static void fill_plain(DType t, void* p, int64_t rows, int64_t cols, const ValueSpec& spec, cudaStream_t s);
    cudaError_t launch_element(DType t, bool producer, unsigned blocks, bool pdl, cudaStream_t s) {
        switch (t) {
            case DType::f32: return launch_typed<float>(producer, blocks, pdl, s);
            case DType::f16: return launch_typed<__half>(producer, blocks, pdl, s);
            case DType::bf16: return launch_typed<__nv_bfloat16>(producer, blocks, pdl, s);
        }
        return cudaErrorInvalidValue;
    }
    template <typename T>
    cudaError_t launch_typed(bool producer, unsigned blocks, bool pdl, cudaStream_t s) {
        if (producer)
            return launch_maybe_pdl(chain_producer<T>, blocks, pdl, s, static_cast<const T*>(z_), static_cast<T*>(x_), n_);
        return launch_maybe_pdl(chain_consumer<T>, blocks, pdl, s, static_cast<const T*>(y_), static_cast<T*>(z_), n_);
    }

    int64_t n_;
    void *x_ = nullptr, *y_ = nullptr, *z_ = nullptr, *w_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

void Chain::fill_plain(DType t, void* p, int64_t rows, int64_t cols, const ValueSpec& spec, cudaStream_t s) {
    // A contiguous tensor's data is its buffer; fill_input needs a DeviceTensor, so write through one and copy.
    DeviceTensor tmp(t, Layout::rows_of(rows, cols, cols));
    fill_input(tmp, spec, s);
    WB_CUDA_CHECK(cudaMemcpyAsync(p, tmp.data(), rows * cols * dtype_size(t), cudaMemcpyDeviceToDevice, s));
    WB_CUDA_CHECK(cudaStreamSynchronize(s));
}

struct ChainShape {
    int64_t rows, cols;
    DType t;
};

std::string chain_label(const ChainShape& c) {
    return "chain_" + std::to_string(c.rows) + "x" + std::to_string(c.cols);
}

}  // namespace

static LessonPlan pdl_plan(const Submission& student, const Submission& reference, const PlanOptions& opt) {
    LessonPlan plan;
    std::vector<PdlCase> cases = {
        {"pdl_chain_late_producer", "after a producer that releases dependents early and writes x late", 64, 4096,
         true, true},
        {"pdl_chain_late_producer_one_row", "the same with one row of 8192", 1, 8192, true, true},
        {"rows_zero", "rows = 0 returns success and launches nothing", 0, 4096},
        {"decode_rows_1", "one row of 4096", 1, 4096},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 4095},
        {"decode_rows_64", "64 rows of 8192", 64, 8192},
        {"many_rows_gt_65535", "70001 rows", 70001, 136},
        {"odd_cols", "1001 columns", 300, 1001},
        {"cols_1", "rows of one element", 257, 1},
        {"prime_cols", "4099 columns", 129, 4099},
        {"misaligned_base", "every pointer one element past an aligned address", 128, 4096, true, false, 1},
        {"pdl_off_plain_stream", "use_pdl = false: an ordinary launch", 64, 4096, false},
        {"pdl_off_after_producer", "use_pdl = false after the late producer: stream order alone protects x", 64,
         4096, false, true},
    };
    for (PdlCase& c : contract_cases()) cases.push_back(std::move(c));
    for (const PdlCase& c : cases) {
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
            if (c.f16_only && t != DType::f16) continue;
            const PdlCall fn = pdl_fn(student, t);
            Case k = make_gpu_case(c.name + "_" + dtype_name(t), c.what,
                                   [c, t, fn](uint64_t seed) { return pdl_call(c, t, seed, fn); }, c.repeats,
                                   c.rows * c.cols > (int64_t(1) << 22));
            if (c.late_producer && c.use_pdl) {
                auto inner = k.run;
                const bool owns_y = c.producer_owns_y;
                k.run = [inner, owns_y](uint64_t seed, int rep) {
                    CaseOutcome o = inner(seed, rep);
                    // Only a wrong y after a correct launch on the right stream can be a read of x
                    // (or a write of y) before the wait; a launch or stream problem is named as itself.
                    if (!o.passed && o.cause == FailureCause::output && o.detail.find("y[") != std::string::npos)
                        o.detail = (owns_y ? "y was written before the kernel ahead of yours finished with it (or x "
                                             "read before it wrote x): touch x and y only after the grid-dependency "
                                             "wait (cudaGridDependencySynchronize or griddepcontrol.wait). "
                                           : "x was read before the producer finished writing it: the grid-dependency "
                                             "wait (cudaGridDependencySynchronize or griddepcontrol.wait) is missing or "
                                             "comes after the first load of x. ") + o.detail;
                    return o;
                };
            }
            plan.cases.push_back(k);
        }
    }

    std::vector<ChainShape> chains = {{16, 4096, DType::bf16}, {64, 8192, DType::bf16}, {1, 4096, DType::f16}};
    if (opt.full_bench) chains.push_back({128, 4096, DType::bf16});
    // Each chain shape: the student's and the reference's chain with PDL, timed like any shape.
    // Bytes count the norm's own traffic per layer, so GB/s compares like with like.
    auto student_chains = std::make_shared<std::vector<std::unique_ptr<Chain>>>();
    for (const ChainShape& c : chains) {
        BenchShape b;
        b.shape = chain_label(c);
        b.dtype = dtype_name(c.t);
        b.bytes = double(2 * c.rows * c.cols + c.cols) * dtype_size(c.t);
        auto s = std::make_shared<std::unique_ptr<Chain>>();
        auto r = std::make_shared<std::unique_ptr<Chain>>();
        const PdlCall fs = pdl_fn(student, c.t), fr = pdl_fn(reference, c.t);
        b.time_student = [s, fs, c] {
            if (!*s) *s = std::make_unique<Chain>(fs, c.t, c.rows, c.cols, true);
            return (*s)->sample();
        };
        b.time_reference = [r, fr, c] {
            if (!*r) *r = std::make_unique<Chain>(fr, c.t, c.rows, c.cols, true);
            return (*r)->sample();
        };
        b.verify_student = [s, r] {
            s->reset();
            r->reset();
            return std::string();
        };
        // The profile looks at the norm itself at the chain's shape, launched with PDL on and
        // nothing before it (the wait returns at once), not at the producer and consumer.
        const PdlCase one{"", "", c.rows, c.cols};
        b.profile_once = [one, c, fs, fr](bool mine) {
            const PdlCall fn = mine ? fs : fr;
            return profile_launch([one, c, fn](uint64_t seed) { return pdl_call(one, c.t, seed, fn); });
        };
        plan.bench.push_back(b);
    }
    // The gate's extra condition: the student's own chain is measurably faster with PDL.
    const int samples = 21;
    plan.extra_gate = [chains, &student, &reference, samples](std::vector<std::string>& notes) -> std::string {
        std::string problem;
        for (const ChainShape& c : chains) {
            for (const Submission* who : {&student, &reference}) {
                const PdlCall fn = pdl_fn(*who, c.t);
                Chain with(fn, c.t, c.rows, c.cols, true), without(fn, c.t, c.rows, c.cols, false);
                std::vector<double> a, b, a2;
                for (int i = 0; i < 3; ++i) with.sample(), without.sample();
                for (int i = 0; i < samples; ++i) {
                    a.push_back(with.sample());
                    b.push_back(without.sample());
                    a2.push_back(with.sample());
                }
                const double on = median(a), off = median(b), noise = noise_band(a, a2, 0.02);
                const double gain = 1.0 - on / off;
                char buf[256];
                std::snprintf(buf, sizeof buf, "%s %s %s chain: %.2f us per layer with PDL, %.2f without (%+.1f%%)",
                              who == &student ? "your" : "reference", chain_label(c).c_str(), dtype_name(c.t),
                              on * 1e6, off * 1e6, 100.0 * gain);
                notes.push_back(buf);
                if (who == &student && gain <= noise && problem.empty())
                    problem = "your chain is not measurably faster with use_pdl = true (" + chain_label(c) +
                              "): launch with cudaLaunchKernelEx and the programmatic-stream-serialization "
                              "attribute when use_pdl is set, and trigger dependents in the kernel (pdl)";
            }
        }
        return problem;
    };
    plan.timing_needs_one_process = true;
    return plan;
}

}  // namespace workbook

WORKBOOK_REGISTER_PLAN(7, [](const workbook::Submission& student, const workbook::Submission* reference,
                              const workbook::PlanOptions& opt) { return workbook::pdl_plan(student, *reference, opt); })
