/**
 * @file rmsnorm_pdl.cu
 * @brief Lesson 7 reference: RMSNorm that overlaps its launch and prologue with the
 *        kernel before it, through programmatic dependent launch (PDL).
 *
 * What it shows:
 *  - the launch: `cudaLaunchKernelEx` with `cudaLaunchAttributeProgrammaticStreamSerialization`,
 *    which lets this grid start while the previous kernel in the stream is still running;
 *  - the prologue that does not depend on the previous kernel (the weight, loaded into
 *    registers) placed before the grid-dependency wait, so it overlaps the producer's tail;
 *  - `cudaGridDependencySynchronize()` before the first read of x (and the first write of y):
 *    from there on the producer has finished and its writes are visible;
 *  - `cudaTriggerProgrammaticLaunchCompletion()` right after the prologue, so the kernel
 *    after this one is launched and runs its own prologue while this one waits and works.
 *
 * The norm itself is lesson 4's (16-byte accesses at the widest legal width, the row kept
 * in registers, fp32 accumulation, 64-bit offsets), cut down to contiguous rows.
 *
 * What it leaves out: strided rows (lesson 4), rows too long for one block's registers
 * kept on chip (lesson 8; here their tail is streamed twice), and PDL inside CUDA graphs
 * built node by node (stream capture of these launches gives programmatic edges already).
 * PDL needs sm_90 or newer: on older devices the entry point returns cudaErrorNotSupported.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson7 {
namespace {

constexpr int kWarpSize = 32;
/// Threads a Hopper SM keeps resident; sizes the grid that walks the rows.
constexpr int kThreadsPerSm = 2048;
/// Largest grid.x a launch accepts.
constexpr int64_t kMaxGridX = 2147483647;

/// fp32 view of an element: all arithmetic is done in fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
/// bf16 is the top half of an fp32: a shift. Written out, it lets the compiler keep the row
/// packed between the two passes; the intrinsic's form makes it hold fp32 copies instead.
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
    return __uint_as_float(static_cast<unsigned>(__bfloat16_as_ushort(v)) << 16);
}

/// Round-to-nearest back to the storage type.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements moved by one 2-, 4-, 8- or 16-byte access (the alignment tells the compiler).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// Sum over G consecutive lanes (G a power of two ≤ 32); xor offsets below G stay in the group.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

/// Sum over a block of BLOCK threads, every thread gets the total; two banks of partials
/// alternate between rows so one barrier per row is enough.
template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float (*partials)[BLOCK / kWarpSize], int bank) {
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    v = group_sum<kWarpSize>(v);
    if (lane == 0) partials[bank][warp] = v;
    __syncthreads();
    const float p = lane < BLOCK / kWarpSize ? partials[bank][lane] : 0.0f;
    return group_sum<kWarpSize>(p);
}

/// Two fp32 values rounded to a packed pair of T in one instruction (cvt.rn.f16x2.f32 or
/// cvt.rn.bf16x2.f32), which also saves the registers of rounding them one at a time.
__device__ __forceinline__ void store_pair(__half* out, float a, float b) {
    *reinterpret_cast<__half2*>(out) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* out, float a, float b) {
    *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(a, b);
}

/// A packed pair of T widened to two fp32 values.
__device__ __forceinline__ float2 load_pair(const __half* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__device__ __forceinline__ float2 load_pair(const __nv_bfloat16* p) {
    const unsigned bits = *reinterpret_cast<const unsigned*>(p);
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
}

/// Sum of squares of one pack, in fp32.
template <typename T, int VEC>
__device__ __forceinline__ float sum_squares(const Pack<T, VEC>& p, float acc) {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 f = load_pair(&p.v[k]);
            acc = fmaf(f.x, f.x, acc);
            acc = fmaf(f.y, f.y, acc);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float f = to_float(p.v[k]);
            acc = fmaf(f, f, acc);
        }
    }
    return acc;
}

/// y = x · inv_rms · w for one pack, rounded once at the end.
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> scale(const Pack<T, VEC>& x, const Pack<T, VEC>& w, float inv_rms) {
    Pack<T, VEC> out;
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
            const float2 xf = load_pair(&x.v[k]);
            const float2 wf = load_pair(&w.v[k]);
            store_pair(&out.v[k], xf.x * inv_rms * wf.x, xf.y * inv_rms * wf.y);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) out.v[k] = from_float<T>(to_float(x.v[k]) * inv_rms * to_float(w.v[k]));
    }
    return out;
}

/**
 * One row per group of G threads (G ≤ 32: BLOCK/G rows per block, shuffles only;
 * G == BLOCK: one row per block). Thread `lane` of a group owns vectors lane, lane + G,
 * ..., lane + (ITERS-1)·G of its row in registers. With TAIL, a row longer than G·ITERS
 * vectors streams the rest twice; only the last configuration needs that.
 */
template <typename T, int VEC, int G, int ITERS, int BLOCK, bool TAIL>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_pdl_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y, int64_t rows,
                       int cols, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    static_assert(G <= kWarpSize ? BLOCK % G == 0 : BLOCK == G, "a row group is a sub-warp or the block");
    using P = Pack<T, VEC>;
    constexpr int kRowsPerBlock = BLOCK / G;
    // Up to 64 bytes a thread, the weight slice sits in registers next to the row. Beyond
    // that the registers it takes cost more occupancy than the weight's latency is worth,
    // so it is only pulled into L2 before the wait.
    constexpr bool kWeightInRegisters = G <= 256 && ITERS * sizeof(P) <= 64;
    __shared__ float partials[2][(G > kWarpSize ? G : kWarpSize) / kWarpSize];

    const int nvec = cols / VEC;
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const P* w = reinterpret_cast<const P*>(weight);

    /// [pdl-prologue]
    // Nothing here depends on the previous kernel: the weight is a parameter of the
    // layer, not its output. With PDL this runs while the producer is still finishing,
    // so the weight's memory latency is paid in the producer's shadow.
    P wv[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        const int idx = lane + i * G;
        if (idx < nvec) {
            if constexpr (kWeightInRegisters) {
                wv[i] = w[idx];
            } else {
                asm volatile("prefetch.L2 [%0];" ::"l"(w + idx));
            }
        }
    }
    /// [pdl-prologue]

    /// [pdl-trigger]
    // Let the next kernel in the stream be launched now, before our own wait. Early is
    // safe: the trigger only allows the dependent grid to be scheduled and publishes no
    // memory; the dependent's own cudaGridDependencySynchronize() still waits for this
    // whole grid to complete and flush its writes. It takes effect once every block of
    // this grid has triggered or exited, so the dependent's blocks never take SM space
    // from blocks of ours that have not started. Triggering before the wait lets the
    // consumer's launch and prologue overlap the producer's tail as well as our rows; in
    // a decode chain that measured a few percent more than triggering after the wait.
    cudaTriggerProgrammaticLaunchCompletion();
    /// [pdl-trigger]

    /// [pdl-wait]
    // Blocks until every grid this one depends on has completed and its memory
    // operations are visible to this grid. Every read of x and every write of y comes
    // after it: x is the producer's output, and y may still be read by an earlier
    // kernel. Without the PDL attribute the stream already ordered the grids and the
    // wait returns at once, so the same kernel serves both launches.
    cudaGridDependencySynchronize();
    /// [pdl-wait]

    int bank = 0;
    // Every thread of a block runs the same number of iterations, so the barriers inside
    // block_sum are never divergent.
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < rows;
        // 64-bit offsets: rows × cols passes 2^31 elements on large tensors.
        const int64_t r = active ? row : 0;
        const P* xr = reinterpret_cast<const P*>(x + r * cols);
        P* yr = reinterpret_cast<P*>(y + r * cols);

        // All loads first, so ITERS independent accesses per thread are in flight at once.
        P xv[ITERS];
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) xv[i] = xr[idx];
        }
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITERS; ++i) {
            const int idx = lane + i * G;
            if (active && idx < nvec) sum = sum_squares(xv[i], sum);
        }
        if constexpr (TAIL) {
            if (active)
                for (int idx = lane + ITERS * G; idx < nvec; idx += G) sum = sum_squares(xr[idx], sum);
        }

        if constexpr (G <= kWarpSize) {
            sum = group_sum<G>(sum);
        } else {
            sum = block_sum<BLOCK>(sum, partials, bank);
            bank ^= 1;
        }
        const float inv_rms = rsqrtf(sum * inv_cols + eps);

        if (active) {
#pragma unroll
            for (int i = 0; i < ITERS; ++i) {
                const int idx = lane + i * G;
                if (idx < nvec) {
                    if constexpr (kWeightInRegisters) {
                        yr[idx] = scale(xv[i], wv[i], inv_rms);
                    } else {
                        yr[idx] = scale(xv[i], w[idx], inv_rms);
                    }
                }
            }
            // Tail of an over-long row: read again, mostly from L2.
            if constexpr (TAIL)
                for (int idx = lane + ITERS * G; idx < nvec; idx += G) yr[idx] = scale(xr[idx], w[idx], inv_rms);
        }
    }
#endif
}

/// [pdl-launch]
/// One launch, with or without PDL. The attribute lets this grid begin before the
/// previous kernel in the stream has finished; the kernel's grid-dependency wait is
/// what keeps that safe. Stream capture turns it into a programmatic graph edge.
template <typename Kernel, typename... Args>
cudaError_t launch(Kernel kernel, int grid, int block, bool use_pdl, cudaStream_t stream, Args... args) {
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;

    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(grid));
    config.blockDim = dim3(static_cast<unsigned>(block));
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = use_pdl ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, args...);
}
/// [pdl-launch]

/// Blocks for a grid that walks the rows: at most what fills every SM, never more than the work.
inline int grid_for(int64_t row_groups, int block, int sms) {
    const int per_sm = kThreadsPerSm / block > 0 ? kThreadsPerSm / block : 1;
    int64_t resident = static_cast<int64_t>(sms) * per_sm;
    if (resident > kMaxGridX) resident = kMaxGridX;
    return static_cast<int>(row_groups < resident ? row_groups : resident);
}

template <typename T, int VEC, int G, int ITERS, bool TAIL = false>
cudaError_t launch_rows(const T* x, const T* w, T* y, int64_t rows, int cols, float eps, bool use_pdl, int sms,
                        cudaStream_t stream) {
    constexpr int kBlock = G <= kWarpSize ? 256 : G;
    constexpr int kRowsPerBlock = kBlock / G;
    const int64_t groups = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    return launch(rmsnorm_pdl_kernel<T, VEC, G, ITERS, kBlock, TAIL>, grid_for(groups, kBlock, sms), kBlock, use_pdl,
                  stream, x, w, y, rows, cols, eps);
}

/// Threads per row (G) and vectors per thread (ITERS) from the row length in vectors.
/// Decode rows (4096 to 8192 cols) get 128 to 256 threads with 4 vectors each: one block
/// per row, every load of the row issued before the first one returns.
template <typename T, int VEC>
cudaError_t launch_width(const T* x, const T* w, T* y, int64_t rows, int cols, float eps, bool use_pdl, int sms,
                         cudaStream_t stream) {
    const int nvec = cols / VEC;
    if (nvec <= 16) return launch_rows<T, VEC, 4, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 32) return launch_rows<T, VEC, 8, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 64) return launch_rows<T, VEC, 16, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 128) return launch_rows<T, VEC, 32, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 256) return launch_rows<T, VEC, 32, 8>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 512) return launch_rows<T, VEC, 128, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 1024) return launch_rows<T, VEC, 256, 4>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 2048) return launch_rows<T, VEC, 256, 8>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 4096) return launch_rows<T, VEC, 512, 8>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    if (nvec <= 8192) return launch_rows<T, VEC, 1024, 8>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
    // Only fp32 rows past 32768 cols, or rows cut to a narrow width, get here.
    return launch_rows<T, VEC, 1024, 4, true>(x, w, y, rows, cols, eps, use_pdl, sms, stream);
}

/// True when `p` may be accessed `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

/**
 * @brief RMSNorm of a contiguous rows × cols matrix, launched with or without
 *        programmatic dependent launch.
 *
 * y[r][c] = x[r][c] · rsqrt(mean_c(x[r][c]²) + eps) · weight[c], accumulated in fp32.
 * Meant to sit between a kernel that produces x and one that consumes y, all on one stream.
 *
 * @tparam T element type of x, weight and y: `float`, `__half` or `__nv_bfloat16`
 * @param[in]  x        input, rows × cols, row r at x + r · cols; written by the previous
 *                      kernel in the stream, so it is read only after the grid-dependency wait
 * @param[in]  weight   cols scale factors; must not be written by the previous kernel
 *                      (it is read before the wait)
 * @param[out] y        output, rows × cols; must not overlap x
 * @param[in]  rows     number of rows; 0 launches nothing
 * @param[in]  cols     elements per row, 1 to 65536
 * @param[in]  eps      added to the mean square inside the square root
 * @param[in]  use_pdl  launch with cudaLaunchAttributeProgrammaticStreamSerialization
 * @param[in]  stream   the only stream the kernel is launched on
 * @return the launch's error code (not synchronised); cudaErrorInvalidValue for a
 *         negative rows or cols outside 1..65536; cudaErrorNotSupported below sm_90
 *
 * Performance: at decode sizes (1 to 128 rows of 4096 to 8192 cols) the kernel moves
 * 16 KB to 2 MB and runs for a few microseconds, about as long as the gap between two
 * dependent kernels; that gap, not bandwidth, is what PDL removes. With the attribute the
 * grid is resident and has its weight in registers when the producer finishes, and the
 * consumer is launched before this kernel even waits. Captured in a CUDA graph, a
 * producer → rmsnorm → consumer chain measured 4% (64 × 8192) to 13% (1 × 8192) less time
 * per layer on an H100 with use_pdl than with the norm launched plainly. Large fp16/bf16
 * matrices still run at 85 to 97% of the copy bandwidth: PDL costs nothing there.
 */
template <typename T>
cudaError_t rmsnorm(const T* x, const T* weight, T* y, int64_t rows, int64_t cols, float eps, bool use_pdl,
                    cudaStream_t stream) {
    if (rows < 0 || cols < 1 || cols > 65536) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;

    int device = 0;
    int major = 0;
    int sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    // griddepcontrol exists from sm_90 on; the kernels are empty when built for older targets.
    if (major < 9) return cudaErrorNotSupported;

    // Widest width (elements) whose accesses are all aligned: it divides cols (so every
    // row start stays aligned) and the addresses of x, weight and y.
    int vec = 16 / static_cast<int>(sizeof(T));
    auto fits = [&](int v) {
        const int bytes = v * static_cast<int>(sizeof(T));
        return cols % v == 0 && aligned_to(x, bytes) && aligned_to(weight, bytes) && aligned_to(y, bytes);
    };
    while (vec > 1 && !fits(vec)) vec /= 2;

    const int n = static_cast<int>(cols);
    switch (vec) {
        case 8:
            if constexpr (sizeof(T) <= 2) return launch_width<T, 8>(x, weight, y, rows, n, eps, use_pdl, sms, stream);
            break;
        case 4:
            return launch_width<T, 4>(x, weight, y, rows, n, eps, use_pdl, sms, stream);
        case 2:
            return launch_width<T, 2>(x, weight, y, rows, n, eps, use_pdl, sms, stream);
        default:
            break;
    }
    return launch_width<T, 1>(x, weight, y, rows, n, eps, use_pdl, sms, stream);
}

}  // namespace workbook::lesson7
