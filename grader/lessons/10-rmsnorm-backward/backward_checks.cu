/// @file backward_checks.cu
/// @brief Lesson 10's saved-rstd input and its dx and dweight comparisons, on the GPU.
#include "lessons/10-rmsnorm-backward/backward_checks.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/device_stats.h"
#include "engine/gpu_checks.h"
#include "engine/check_grid.h"
#include "engine/launch_guard.h"
#include "engine/poison.h"
#include "workbook/cuda_check.h"
#include "workbook/tolerance.h"

namespace workbook {
namespace {

constexpr int kThreads = kCheckThreads;
constexpr auto grid_for = check_grid_for;

template <typename F>
void with_type(DType dtype, F&& f) {
    switch (dtype) {
        case DType::f32: f(float{}); break;
        case DType::f16: f(__half{}); break;
        case DType::bf16: f(__nv_bfloat16{}); break;
    }
}


/// One thread per row: the saved rstd, written where the layout puts row r's one element.
template <typename T>
__global__ void saved_rstd_kernel(BackwardProblem p, Layout layout, float* out) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < p.rows; r += int64_t(gridDim.x) * blockDim.x)
        out[layout.offset(r, 0)] = saved_rstd<T>(p, r);
}

/// Counts rows whose rstd bits differ from saved_rstd.
template <typename T>
__global__ void rstd_check_kernel(BackwardProblem p, Layout layout, const float* rstd, DeviceStats* c) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < p.rows; r += int64_t(gridDim.x) * blockDim.x) {
        const float want = saved_rstd<T>(p, r);
        const float have = rstd[layout.offset(r, 0)];
        if (__float_as_uint(want) != __float_as_uint(have)) {
            atomicAdd(&c->bad, 1ull);
            atomicMin(&c->first, static_cast<unsigned long long>(r));
        }
    }
}

/// Deliberately naive: one thread walks one whole row in fp64.
template <typename T>
__global__ void backward_stats_kernel(BackwardProblem p, BackwardRowStats* stats) {
    for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < p.rows; r += int64_t(gridDim.x) * blockDim.x)
        stats[r] = backward_row_stats<T>(p, r);
}

template <typename T>
__global__ void dx_compare_kernel(BackwardProblem p, Layout layout, const T* dx, const BackwardRowStats* stats,
                                  Tolerance tol, DeviceStats* c) {
    const int64_t n = p.rows * p.cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / p.cols, col = i % p.cols;
        const T v = dx[layout.offset(r, col)];
        const double got = Elem<T>::to_float(v);
        if (!within(oracle_dx<T>(p, r, col, stats[r]), got, tol, oracle_dx_scale<T>(p, r, col, stats[r]))) {
            atomicAdd(&c->bad, 1ull);
            if (is_poison(v)) atomicAdd(&c->unwritten, 1ull);
            else if (got != got) atomicAdd(&c->nan, 1ull);  // a NaN the kernel wrote
            atomicMin(&c->first, static_cast<unsigned long long>(i));
        }
    }
}

/// Deliberately naive: one thread walks one whole column, every row, in fp64.
template <typename T>
__global__ void dweight_compare_kernel(BackwardProblem p, Layout layout, const float* dweight, const float* rstd,
                                       Tolerance tol, DeviceStats* c) {
    for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; col < p.cols;
         col += int64_t(gridDim.x) * blockDim.x) {
        const float v = dweight[layout.offset(0, col)];
        const ColumnSum want = oracle_dweight<T>(p, col, rstd);
        if (!within(want.sum, v, tol, want.l2)) {
            atomicAdd(&c->bad, 1ull);
            if (is_poison(v)) atomicAdd(&c->unwritten, 1ull);
            else if (v != v) atomicAdd(&c->nan, 1ull);  // a NaN the kernel wrote
            atomicMin(&c->first, static_cast<unsigned long long>(col));
        }
    }
}


/// A device buffer of n values, freed with the stream's order.
template <typename V>
class Scratch {
public:
    Scratch(int64_t n, cudaStream_t stream) : stream_(stream) {
        WB_CUDA_CHECK(cudaMallocAsync(&d_, sizeof(V) * static_cast<size_t>(n > 0 ? n : 1), stream));
    }
    ~Scratch() {
        if (!device_hung()) cudaFreeAsync(d_, stream_);
    }
    V* get() const { return d_; }

private:
    cudaStream_t stream_;
    V* d_ = nullptr;
};

/// The saved rstd of every row, computed on the device into `out` (contiguous).
void saved_rstds(const BackwardProblem& p, DType dtype, float* out, cudaStream_t stream) {
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        saved_rstd_kernel<T><<<grid_for(p.rows), kThreads, 0, stream>>>(p, Layout::rows_of(p.rows, 1, 1), out);
    });
    WB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fill_saved_rstd(const DeviceTensor& rstd, const BackwardProblem& p, DType dtype, cudaStream_t stream) {
    WB_CUDA_CHECK(cudaMemsetAsync(rstd.base(), kMarkerByte, rstd.total_bytes(), stream));
    if (p.rows == 0) return;
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        saved_rstd_kernel<T><<<grid_for(p.rows), kThreads, 0, stream>>>(p, rstd.layout(), static_cast<float*>(rstd.data()));
    });
    WB_CUDA_CHECK(cudaGetLastError());
}

std::string check_saved_rstd_unchanged(const DeviceTensor& rstd, const BackwardProblem& p, DType dtype,
                                       cudaStream_t stream) {
    StatsBuffer counters(stream);
    if (p.rows > 0) {
        with_type(dtype, [&](auto tag) {
            using T = decltype(tag);
            rstd_check_kernel<T><<<grid_for(p.rows), kThreads, 0, stream>>>(
                p, rstd.layout(), static_cast<const float*>(rstd.data()), counters.get());
        });
        WB_CUDA_CHECK(cudaGetLastError());
    }
    const DeviceStats c = counters.read();
    std::string out;
    if (c.bad) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "the input rstd was modified: %llu row(s) changed, the first row %lld "
                      "(inputs are read-only here). ", c.bad, static_cast<long long>(c.first));
        out = buf;
    }
    const std::string outside = check_untouched_outside(rstd, "rstd", stream);
    out += outside;  // "wrote outside rstd: ..." names the input
    return out;
}

CompareResult compare_dx(const BackwardProblem& p, DType dtype, const DeviceTensor& dx, cudaStream_t stream) {
    CompareResult result;
    result.tol = grad_x_tolerance(dtype, p.cols);
    if (p.rows == 0) return result;
    result.total = static_cast<uint64_t>(p.rows) * static_cast<uint64_t>(p.cols);
    StatsBuffer counters(stream);
    Scratch<BackwardRowStats> stats(p.rows, stream);
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        backward_stats_kernel<T><<<grid_for(p.rows), kThreads, 0, stream>>>(p, stats.get());
        dx_compare_kernel<T><<<grid_for(p.rows * p.cols), kThreads, 0, stream>>>(
            p, dx.layout(), static_cast<const T*>(dx.data()), stats.get(), result.tol, counters.get());
    });
    WB_CUDA_CHECK(cudaGetLastError());
    const DeviceStats c = counters.read();
    result.bad = c.bad;
    result.unwritten = c.unwritten;
    result.nan = c.nan;
    if (c.bad == 0) return result;
    result.first_row = static_cast<int64_t>(c.first / p.cols);
    result.first_col = static_cast<int64_t>(c.first % p.cols);
    // The first wrong element, recomputed on the CPU: the report does not rest on the GPU oracle alone.
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        T v;
        const auto* src = static_cast<const T*>(dx.data()) + dx.layout().offset(result.first_row, result.first_col);
        WB_CUDA_CHECK(cudaMemcpy(&v, src, sizeof v, cudaMemcpyDeviceToHost));
        result.got = Elem<T>::to_float(v);
        result.first_unwritten = is_poison(v);
        result.expected = oracle_dx<T>(p, result.first_row, result.first_col, backward_row_stats<T>(p, result.first_row));
    });
    return result;
}

CompareResult compare_dweight(const BackwardProblem& p, DType dtype, const DeviceTensor& dweight, cudaStream_t stream) {
    CompareResult result;
    result.tol = grad_weight_tolerance(p.rows);
    result.total = static_cast<uint64_t>(p.cols);
    StatsBuffer counters(stream);
    Scratch<float> rstd(p.rows, stream);
    if (p.rows > 0) saved_rstds(p, dtype, rstd.get(), stream);
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        dweight_compare_kernel<T><<<grid_for(p.cols), kThreads, 0, stream>>>(
            p, dweight.layout(), static_cast<const float*>(dweight.data()), rstd.get(), result.tol, counters.get());
    });
    WB_CUDA_CHECK(cudaGetLastError());
    const DeviceStats c = counters.read();
    result.bad = c.bad;
    result.unwritten = c.unwritten;
    result.nan = c.nan;
    if (c.bad == 0) return result;
    result.first_row = 0;
    result.first_col = static_cast<int64_t>(c.first);
    float v = 0;
    WB_CUDA_CHECK(cudaMemcpy(&v, static_cast<const float*>(dweight.data()) + dweight.layout().offset(0, result.first_col),
                             sizeof v, cudaMemcpyDeviceToHost));
    result.got = v;
    result.first_unwritten = is_poison(v);
    // The column again on the CPU, from the rows' rstd as they were filled in.
    std::vector<float> host(static_cast<size_t>(p.rows));
    if (p.rows > 0)
        WB_CUDA_CHECK(cudaMemcpy(host.data(), rstd.get(), sizeof(float) * host.size(), cudaMemcpyDeviceToHost));
    with_type(dtype, [&](auto tag) {
        using T = decltype(tag);
        result.expected = oracle_dweight<T>(p, result.first_col, host.data()).sum;
    });
    return result;
}

std::string self_check_backward_oracle(cudaStream_t stream) {
    BackwardProblem p;
    p.rows = 37;
    p.cols = 301;
    p.dy = ValueSpec{777, 1, 0.0f, 2.0f};
    p.x = ValueSpec{777, 0, 0.0f, 2.0f};
    p.weight = ValueSpec{777, 7, 0.25f, 2.0f, true};
    Scratch<BackwardRowStats> stats(p.rows, stream);
    Scratch<float> rstd(p.rows, stream);
    backward_stats_kernel<__half><<<1, kThreads, 0, stream>>>(p, stats.get());
    saved_rstds(p, DType::f16, rstd.get(), stream);
    WB_CUDA_CHECK(cudaGetLastError());
    std::vector<BackwardRowStats> gpu(static_cast<size_t>(p.rows));
    std::vector<float> gpu_rstd(static_cast<size_t>(p.rows));
    WB_CUDA_CHECK(cudaMemcpyAsync(gpu.data(), stats.get(), sizeof(BackwardRowStats) * gpu.size(), cudaMemcpyDeviceToHost,
                                  stream));
    WB_CUDA_CHECK(cudaMemcpyAsync(gpu_rstd.data(), rstd.get(), sizeof(float) * gpu_rstd.size(), cudaMemcpyDeviceToHost,
                                  stream));
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int64_t r = 0; r < p.rows; ++r) {
        const BackwardRowStats cpu = backward_row_stats<__half>(p, r);
        // One fp32 ulp for the saved rstd: the device may fuse the fp64 multiply-adds of the sum.
        const double ulp = std::ldexp(std::fabs(cpu.rstd), -23);
        if (!(std::fabs(gpu_rstd[r] - cpu.rstd) <= ulp) || !(std::fabs(gpu[r].rstd - cpu.rstd) <= ulp) ||
            !(std::fabs(gpu[r].m - cpu.m) <= 1e-6 * cpu.mean_abs))
            return "the GPU oracle of lesson 10 disagrees with the CPU oracle at row " + std::to_string(r);
    }
    return "";
}

}  // namespace workbook
