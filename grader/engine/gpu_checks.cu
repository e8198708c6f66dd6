/// @file gpu_checks.cu
/// @brief Fill, poison, oracle and write-check kernels of the grader.
#include "engine/gpu_checks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/device_stats.h"
#include "engine/check_grid.h"
#include "engine/poison.h"
#include "engine/launch_guard.h"
#include "report/guard_report.h"
#include "engine/sampling_hooks.h"
#include "workbook/cuda_check.h"

namespace workbook {
namespace {

constexpr int kThreads = kCheckThreads;
constexpr auto grid_for = check_grid_for;
/// Rows whose oracle statistics compare_output holds at once (24 bytes each: 1.6 GB).
constexpr int64_t kCompareChunkRows = int64_t(1) << 26;

/// Calls f with a value of the C++ type that `dtype` names.
template <typename F>
void with_type(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f32: f(float{}); break;
        case DType::f16: f(__half{}); break;
        case DType::bf16: f(__nv_bfloat16{}); break;
        case DType::e4m3: f(E4m3{}); break;
    }
}

/// The same for the activations' type (the inputs' rounding), which is never e4m3.
template <typename F>
void with_activation_type(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f16: f(__half{}); break;
        case DType::bf16: f(__nv_bfloat16{}); break;
        case DType::e4m3: throw std::logic_error("e4m3 is an output type, not an activation type");
        default: f(float{}); break;
    }
}

template <typename T>
__global__ void fill_input_kernel(T* data, Layout layout, ValueSpec spec) {
    const int64_t n = layout.rows * layout.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / layout.cols, c = i % layout.cols;
        data[layout.offset(r, c)] = Elem<T>::from_float(raw_value(spec, r, c, layout.cols));
    }
}

template <typename T>
__global__ void poison_kernel(typename Poison<T>::Bits* data, Layout layout) {
    const int64_t n = layout.rows * layout.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        data[layout.offset(i / layout.cols, i % layout.cols)] = Poison<T>::bits;
}

/// The rows a check visits: rows[first .. first + count) when `rows` is set (a sampled call on the
/// CPU emulator), else rows first .. first + count.
struct RowList {
    const int64_t* rows = nullptr;
    int64_t count = 0;
    int64_t first = 0;  ///< where this part of a longer list starts (compare_output's chunks)
    WB_HD int64_t operator[](int64_t k) const { return rows ? rows[first + k] : first + k; }
    /// Entries from..from + n of this list.
    RowList part(int64_t from, int64_t n) const { return RowList{rows, n, first + from}; }
};

template <typename T>
__global__ void count_poisoned_kernel(const typename Poison<T>::Bits* data, Layout layout, RowList rows,
                                      unsigned long long* count) {
    const int64_t n = rows.count * layout.cols;
    unsigned long long mine = 0;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        mine += data[layout.offset(rows[i / layout.cols], i % layout.cols)] == Poison<T>::bits;
    if (mine) atomicAdd(count, mine);
}


/// Deliberately naive fp64 oracle: one thread walks one whole row.
template <typename T>
__global__ void oracle_stats_kernel(OracleProblem p, RowList rows, RowStats* stats) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < rows.count; k += int64_t(gridDim.x) * blockDim.x)
        stats[k] = oracle_row_stats<T>(p, rows[k]);
}

/// The expected value of element (r, c) of an output, and the scale its accumulation error grows with.
template <typename T>
WB_HD inline double expected_value(const OracleProblem& p, OutputKind kind, int64_t r, int64_t c, RowStats st,
                                   double* scale) {
    *scale = 0.0;
    switch (kind) {
        case OutputKind::rounded_sum: return oracle_sum_input<T>(p, r, c);
        case OutputKind::rstd: *scale = rstd_scale(st.mean_abs, st.rstd); return st.rstd;
        case OutputKind::normalised_scaled: *scale = oracle_output_scale<T>(p, r, c, st); return oracle_output<T>(p, r, c, st);
        case OutputKind::external: return 0.0;  // judged by the call's own check, never here
        default: return oracle_output<T>(p, r, c, st.rstd);
    }
}

/// T: the activations' type (the inputs' rounding); S: how the output is stored.
template <typename T, typename S>
__global__ void compare_kernel(OracleProblem p, int64_t cols, Layout layout, RowList rows, const S* y,
                               const RowStats* row_stats, OutputKind kind, Tolerance tol, DeviceStats* stats) {
    const int64_t n = rows.count * cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t k = i / cols, r = rows[k], c = i % cols;
        const S v = y[layout.offset(r, c)];
        const double got = Elem<S>::to_float(v);
        double scale = 0.0;
        const double expected = expected_value<T>(p, kind, r, c, row_stats[k], &scale);
        if (!within(expected, got, tol, scale)) {
            atomicAdd(&stats->bad, 1ull);
            if (is_poison(v)) atomicAdd(&stats->unwritten, 1ull);
            else if (got != got) atomicAdd(&stats->nan, 1ull);  // a NaN the kernel wrote
            // The index in the whole list, not in this chunk of it.
            atomicMin(&stats->first, static_cast<unsigned long long>(rows.first * cols + i));
        }
    }
}

/// Counts owned elements whose bits differ from what fill_input wrote.
template <typename T, typename Bits>
__global__ void input_check_kernel(const T* data, Layout layout, RowList rows, ValueSpec spec, DeviceStats* stats) {
    const int64_t n = rows.count * layout.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = rows[i / layout.cols], c = i % layout.cols;
        const T want = Elem<T>::from_float(raw_value(spec, r, c, layout.cols));
        const T have = data[layout.offset(r, c)];
        if (*reinterpret_cast<const Bits*>(&want) != *reinterpret_cast<const Bits*>(&have)) {
            atomicAdd(&stats->bad, 1ull);
            atomicMin(&stats->first, static_cast<unsigned long long>(r * layout.cols + c));
        }
    }
}

/// Counts element `e` when the layout does not own it and any of its bytes lost the marker.
__device__ void check_padding_element(const unsigned char* data, const Layout& layout, int64_t e, int elem_size,
                                      DeviceStats* stats) {
    if (layout.owns(e)) return;
    for (int b = 0; b < elem_size; ++b)
        if (data[e * elem_size + b] != kMarkerByte) {
            atomicAdd(&stats->bad, 1ull);
            atomicMin(&stats->first, static_cast<unsigned long long>(e));
            return;
        }
}

/// Counts elements of the span that no row owns (padding) and whose bytes lost the marker.
__global__ void padding_check_kernel(const unsigned char* data, Layout layout, int elem_size, DeviceStats* stats) {
    const int64_t n = layout.span();
    for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
        check_padding_element(data, layout, e, elem_size, stats);
}

/// The same for the padding after each listed row only: up to the next row's first element (the
/// rows of a sampled call that its launches touched; untouched padding is unchanged).
__global__ void padding_after_rows_kernel(const unsigned char* data, Layout layout, RowList rows, int elem_size,
                                          DeviceStats* stats) {
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < rows.count; k += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = rows[k];
        const int64_t end = r + 1 < layout.rows ? layout.offset(r + 1, 0) : layout.span();
        for (int64_t e = layout.offset(r, layout.cols - 1) + 1; e < end; ++e)
            check_padding_element(data, layout, e, elem_size, stats);
    }
}

/// The rows the checks of one tensor visit: every row, or (a sampled call on the CPU emulator,
/// engine/sampling_hooks.h) the listed ones, copied where the check kernels read them.
class CheckedRows {
public:
    CheckedRows(const DeviceTensor& t, RowsFor why, int64_t all_rows, cudaStream_t stream) : stream_(stream) {
        list_.count = all_rows;
        if (!sampling_hooks().rows || !sampling_hooks().rows(t, why, host_)) return;
        sampled_ = true;
        list_.count = static_cast<int64_t>(host_.size());
        if (host_.empty()) return;
        int64_t* d = nullptr;
        WB_CUDA_CHECK(cudaMallocAsync(&d, sizeof(int64_t) * host_.size(), stream));
        WB_CUDA_CHECK(cudaMemcpyAsync(d, host_.data(), sizeof(int64_t) * host_.size(), cudaMemcpyHostToDevice, stream));
        list_.rows = d;
    }
    ~CheckedRows() {
        if (list_.rows) cudaFreeAsync(const_cast<int64_t*>(list_.rows), stream_);
    }
    CheckedRows(const CheckedRows&) = delete;
    CheckedRows& operator=(const CheckedRows&) = delete;
    RowList list() const { return list_; }
    /// True when only some rows are visited (none, where a sampled call touched none).
    bool sampled() const { return sampled_; }
    /// The row of the k-th element row visited.
    int64_t row(int64_t k) const { return host_.empty() ? k : host_[static_cast<size_t>(k)]; }

private:
    cudaStream_t stream_;
    std::vector<int64_t> host_;
    RowList list_;
    bool sampled_ = false;
};

__global__ void scribble_kernel(int words) {
    extern __shared__ float smem[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = __int_as_float(0x7fffffff);
}


template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>;

}  // namespace

void fill_input(const DeviceTensor& t, const ValueSpec& spec, cudaStream_t stream) {
    if (sampling_hooks().lazy_contents && sampling_hooks().lazy_contents(t, &spec)) return;
    WB_CUDA_CHECK(cudaMemsetAsync(t.base(), kMarkerByte, t.total_bytes(), stream));
    const Layout& l = t.layout();
    if (l.rows == 0) return;
    with_type(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        fill_input_kernel<T><<<grid_for(l.rows * l.cols), kThreads, 0, stream>>>(static_cast<T*>(t.data()), l, spec);
    });
    WB_CUDA_CHECK(cudaGetLastError());
}

void poison_output(const DeviceTensor& t, cudaStream_t stream) {
    if (sampling_hooks().lazy_contents && sampling_hooks().lazy_contents(t, nullptr)) return;
    WB_CUDA_CHECK(cudaMemsetAsync(t.base(), kMarkerByte, t.total_bytes(), stream));
    const Layout& l = t.layout();
    if (l.rows == 0) return;
    with_type(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        poison_kernel<T><<<grid_for(l.rows * l.cols), kThreads, 0, stream>>>(
            static_cast<typename Poison<T>::Bits*>(t.data()), l);
    });
    WB_CUDA_CHECK(cudaGetLastError());
}

namespace {

/// Adds the poisoned elements of the listed rows of `t` to the device counter `*count` on `stream`.
void count_poisoned_rows(const DeviceTensor& t, RowList rows, unsigned long long* count, cudaStream_t stream) {
    const Layout& l = t.layout();
    if (rows.count == 0) return;
    with_type(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        count_poisoned_kernel<T><<<grid_for(rows.count * l.cols), kThreads, 0, stream>>>(
            static_cast<const typename Poison<T>::Bits*>(t.data()), l, rows, count);
    });
    WB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void count_poisoned_async(const DeviceTensor& t, unsigned long long* count, cudaStream_t stream) {
    count_poisoned_rows(t, RowList{nullptr, t.layout().rows}, count, stream);
}

size_t count_poisoned(const DeviceTensor& t, cudaStream_t stream) {
    if (t.layout().rows == 0) return 0;
    StatsBuffer stats(stream);
    const CheckedRows rows(t, RowsFor::compare, t.layout().rows, stream);
    count_poisoned_rows(t, rows.list(), &stats.get()->bad, stream);
    return static_cast<size_t>(stats.read().bad);
}

namespace {
Tolerance tolerance_for(OutputKind kind, DType dtype, int64_t cols, int extra_ulps) {
    switch (kind) {
        case OutputKind::rounded_sum: return rounded_sum_tolerance(dtype);
        case OutputKind::normalised_scaled: return norm_output_tolerance(dtype, cols, extra_ulps);
        case OutputKind::rstd: return rstd_tolerance(dtype, cols, extra_ulps);
        case OutputKind::external:  // judged by the call's own check
        default: return output_tolerance(dtype, cols, extra_ulps);
    }
}
}  // namespace

CompareResult compare_output(const OracleProblem& p, DType dtype, const DeviceTensor& y, OutputKind kind,
                             int extra_ulps, cudaStream_t stream) {
    CompareResult result;
    result.tol = tolerance_for(kind, dtype, p.cols, extra_ulps);
    if (p.rows == 0) return result;
    // rstd has one element per row; every other output one per (row, col).
    const int64_t cols = kind == OutputKind::rstd ? 1 : p.cols;
    const CheckedRows rows(y, RowsFor::compare, p.rows, stream);
    const int64_t checked = rows.list().count;
    result.total = static_cast<uint64_t>(checked) * static_cast<uint64_t>(cols);
    if (checked == 0) return result;
    StatsBuffer stats(stream);
    // The oracle's statistics, a chunk of rows at a time: 24 bytes a row would be 103 GB for
    // lesson 6's 2^32 + 1 heads, more than the device holds beside the tensor.
    const int64_t chunk = std::min<int64_t>(checked, kCompareChunkRows);
    RowStats* row_stats = nullptr;
    WB_CUDA_CHECK(cudaMallocAsync(&row_stats, sizeof(RowStats) * chunk, stream));
    for (int64_t from = 0; from < checked; from += chunk) {
        const RowList part = rows.list().part(from, std::min(chunk, checked - from));
        with_activation_type(dtype, [&](auto tag) {
            using T = decltype(tag);
            oracle_stats_kernel<T><<<grid_for(part.count), kThreads, 0, stream>>>(p, part, row_stats);
            with_type(y.dtype(), [&](auto stored) {
                using S = decltype(stored);
                compare_kernel<T, S><<<grid_for(part.count * cols), kThreads, 0, stream>>>(
                    p, cols, y.layout(), part, static_cast<const S*>(y.data()), row_stats, kind, result.tol,
                    stats.get());
            });
        });
        WB_CUDA_CHECK(cudaGetLastError());
    }
    WB_CUDA_CHECK(cudaFreeAsync(row_stats, stream));
    const DeviceStats s = stats.read();
    result.bad = s.bad;
    result.unwritten = s.unwritten;
    result.nan = s.nan;
    if (s.bad == 0) return result;
    result.first_row = rows.row(static_cast<int64_t>(s.first / cols));
    result.first_col = static_cast<int64_t>(s.first % cols);
    // Recompute the first wrong element on the CPU: the report does not rest on the GPU oracle alone.
    with_activation_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        with_type(y.dtype(), [&](auto stored) {
            using S = decltype(stored);
            S v;
            const auto* src = static_cast<const S*>(y.data()) + y.layout().offset(result.first_row, result.first_col);
            WB_CUDA_CHECK(cudaMemcpy(&v, src, sizeof v, cudaMemcpyDeviceToHost));
            result.got = Elem<S>::to_float(v);
            result.first_unwritten = is_poison(v);
            double scale = 0.0;
            result.expected = expected_value<T>(p, kind, result.first_row, result.first_col,
                                                oracle_row_stats<T>(p, result.first_row), &scale);
        });
    });
    return result;
}

namespace {

/// "0x3f000000 (0.5)": an element's bytes as the hex of its bits and its value in `dtype`.
std::string element_text(DType dtype, const unsigned char* bytes) {
    const size_t size = dtype_size(dtype);
    uint32_t bits = 0;
    std::memcpy(&bits, bytes, size);  // little-endian, as host and device are
    double value = 0;
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        T v;
        std::memcpy(&v, bytes, sizeof v);
        value = Elem<T>::to_float(v);
    });
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%0*x (%.9g)", static_cast<int>(2 * size), bits, value);
    return buf;
}

/// What changed in one guard zone of `t` (its bytes read back), nearest element to the tensor first.
GuardWrite guard_zone_write(const DeviceTensor& t, const std::vector<unsigned char>& zone, bool before) {
    const size_t size = dtype_size(t.dtype());
    const size_t elements = zone.size() / size;  // the misalignment is whole elements, so the zone is too
    GuardWrite g;
    g.before = before;
    g.span = t.layout().span();
    for (size_t k = 0; k < elements; ++k) {
        const unsigned char* e = &zone[(before ? elements - 1 - k : k) * size];
        bool changed = false;
        for (size_t b = 0; b < size; ++b) changed |= e[b] != kMarkerByte;
        if (!changed || g.changed++ > 0) continue;
        g.index = before ? -static_cast<int64_t>(k + 1) : g.span + static_cast<int64_t>(k);
        g.got = element_text(t.dtype(), e);
    }
    const std::vector<unsigned char> marker(size, kMarkerByte);
    g.expected = "the guard marker " + element_text(t.dtype(), marker.data());
    return g;
}

}  // namespace

std::string check_untouched_outside(const DeviceTensor& t, const char* tensor_name, cudaStream_t stream) {
    std::vector<unsigned char> lead(t.lead_bytes()), tail(t.guard_bytes());
    // A tight input (set_tight_inputs) has no guard zone: nothing to copy, and the tail would start one
    // past the allocation's end.
    if (!lead.empty())
        WB_CUDA_CHECK(cudaMemcpyAsync(lead.data(), t.base(), lead.size(), cudaMemcpyDeviceToHost, stream));
    if (!tail.empty())
        WB_CUDA_CHECK(cudaMemcpyAsync(tail.data(), t.base() + t.lead_bytes() + t.span_bytes(), tail.size(),
                                      cudaMemcpyDeviceToHost, stream));
    StatsBuffer stats(stream);
    if (t.layout().rows > 0) {
        const CheckedRows rows(t, RowsFor::unchanged, t.layout().rows, stream);
        if (rows.sampled())
            padding_after_rows_kernel<<<grid_for(rows.list().count), kThreads, 0, stream>>>(
                static_cast<const unsigned char*>(t.data()), t.layout(), rows.list(),
                static_cast<int>(dtype_size(t.dtype())), stats.get());
        else
            padding_check_kernel<<<grid_for(t.layout().span()), kThreads, 0, stream>>>(
                static_cast<const unsigned char*>(t.data()), t.layout(), static_cast<int>(dtype_size(t.dtype())),
                stats.get());
        WB_CUDA_CHECK(cudaGetLastError());
    }
    const DeviceStats s = stats.read();
    std::string out;
    char buf[256];
    for (bool before : {true, false}) {
        const GuardWrite g = guard_zone_write(t, before ? lead : tail, before);
        if (g.changed) out += describe_guard_write(g, tensor_name) + ". ";
    }
    if (s.bad) {
        const Layout& l = t.layout();
        std::snprintf(buf, sizeof buf, "wrote outside %s: %llu padding element(s) changed (elements between a "
                      "row's end and the next row's start), the first at index %llu (after row %lld). ",
                      tensor_name, (unsigned long long)s.bad, (unsigned long long)s.first,
                      (long long)(s.first / l.outer_stride));
        out += buf;
    }
    return out;
}

std::string check_input_unchanged(const DeviceTensor& t, const ValueSpec& spec, const char* tensor_name,
                                  cudaStream_t stream) {
    const Layout& l = t.layout();
    StatsBuffer stats(stream);
    if (l.rows > 0) {
        const CheckedRows rows(t, RowsFor::unchanged, l.rows, stream);
        with_type(t.dtype(), [&](auto tag) {
            using T = decltype(tag);
            input_check_kernel<T, BitsOf<T>><<<grid_for(rows.list().count * l.cols), kThreads, 0, stream>>>(
                static_cast<const T*>(t.data()), l, rows.list(), spec, stats.get());
        });
        WB_CUDA_CHECK(cudaGetLastError());
    }
    const DeviceStats s = stats.read();
    std::string out;
    if (s.bad) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "the input %s was modified: %llu element(s) changed, the first at row %lld, "
                      "col %lld (inputs are read-only here). ", tensor_name, (unsigned long long)s.bad,
                      (long long)(s.first / l.cols), (long long)(s.first % l.cols));
        out = buf;
    }
    const std::string outside = check_untouched_outside(t, tensor_name, stream);
    out += outside;  // "wrote outside x: ..." names the input
    return out;
}

void scribble_shared_memory(cudaStream_t stream) {
#ifdef WORKBOOK_CPU_EMULATOR
    // The CPU emulator fills each block's shared memory with NaN when the block starts.
    (void)stream;
    return;
#endif
    static int smem_bytes = -1, blocks = 0;
    if (smem_bytes < 0) {
        int device = 0;
        WB_CUDA_CHECK(cudaGetDevice(&device));
        cudaDeviceProp prop{};
        WB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        smem_bytes = static_cast<int>(prop.sharedMemPerBlockOptin);
        WB_CUDA_CHECK(cudaFuncSetAttribute(scribble_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
        const int per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor / prop.sharedMemPerBlockOptin);
        blocks = prop.multiProcessorCount * (per_sm < 1 ? 1 : per_sm);
    }
    scribble_kernel<<<blocks, 1024, smem_bytes, stream>>>(smem_bytes / 4);
    WB_CUDA_CHECK(cudaGetLastError());
}

std::string self_check_gpu_oracle(cudaStream_t stream) {
    OracleProblem p;
    p.rows = 9;
    p.cols = 3001;
    p.x = ValueSpec{12345, 0, 0.0f, 3.0f};
    p.weight = ValueSpec{12345, 1, 0.25f, 2.0f, true};
    p.has_residual = true;
    p.residual = ValueSpec{12345, 2, 0.0f, 1.0f};
    // The RMSNorm problem, then a LayerNorm one whose rows have a mean far from zero.
    for (int layer = 0; layer < 2; ++layer) {
        p.layer_norm = layer == 1;
        p.x.offset = layer == 1 ? 100.0f : 0.0f;
        std::vector<RowStats> gpu(p.rows);
        RowStats* stats = nullptr;
        WB_CUDA_CHECK(cudaMalloc(&stats, sizeof(RowStats) * p.rows));
        oracle_stats_kernel<__half><<<1, kThreads, 0, stream>>>(p, RowList{nullptr, p.rows}, stats);
        WB_CUDA_CHECK(cudaGetLastError());
        WB_CUDA_CHECK(cudaMemcpyAsync(gpu.data(), stats, sizeof(RowStats) * p.rows, cudaMemcpyDeviceToHost, stream));
        WB_CUDA_CHECK(cudaStreamSynchronize(stream));
        WB_CUDA_CHECK(cudaFree(stats));
        for (int64_t r = 0; r < p.rows; ++r) {
            const RowStats cpu = oracle_row_stats<__half>(p, r);
            if (!(std::fabs(gpu[r].rstd - cpu.rstd) <= 1e-12 * std::fabs(cpu.rstd)) ||
                !(std::fabs(gpu[r].mean - cpu.mean) <= 1e-12 * (1.0 + std::fabs(cpu.mean))))
                return std::string("the GPU oracle disagrees with the CPU oracle (") + (layer ? "LayerNorm" : "RMSNorm") +
                       ") at row " + std::to_string(r);
        }
    }
    return "";
}

}  // namespace workbook
