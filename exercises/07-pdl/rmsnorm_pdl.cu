/**
 * @file rmsnorm_pdl.cu
 * @brief Lesson 7 exercise: RMSNorm launched with programmatic dependent launch (PDL).
 *
 * This is the only file you edit for lesson 7. Build and grade it with
 *     make lesson7 && ./grade lesson7
 * and ask for a hint with `./grade lesson7 --hint` (ask again for the next one).
 *
 * Contract: y[r][c] = x[r][c] * rsqrt(mean(x[r][:]^2) + eps) * weight[c] for T = float,
 * __half and __nv_bfloat16, accumulated in fp32. Rows are contiguous: row r starts at
 * x + r * cols. rows >= 0 (rows = 0 launches nothing and returns cudaSuccess), cols
 * 1..65536, rows * cols may pass 2^31 elements, any pointer may be aligned to the element
 * size only. x is written by the kernel launched just before yours on the same stream;
 * weight is not. When use_pdl is true, launch with cudaLaunchKernelEx and the
 * cudaLaunchAttributeProgrammaticStreamSerialization attribute; when false, an ordinary
 * launch. Launch on `stream` only, allocate nothing, do not synchronise, return the
 * launch's error code. PDL needs sm_90 or newer; return cudaErrorNotSupported below it.
 *
 * The grader runs your kernel after a producer that lets it start early and writes x
 * late, and times a decode-size chain (producer -> rmsnorm -> consumer, many layers, one
 * CUDA graph) with and without PDL.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 * The helpers below are lesson 4's; the new work is in the kernel and the launch.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson7 {
namespace {

/// fp32 view of an element.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Round-to-nearest back to the storage type.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// VEC elements moved by one access of VEC * sizeof(T) bytes.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

/// Sum over the 32 lanes of a warp; every lane gets the total.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <typename T>
__global__ void rmsnorm_pdl_kernel(const T* x, const T* weight, T* y, int64_t rows, int64_t cols, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // TODO(1): the prologue. Load this thread's share of `weight` into registers now: it
    //          does not depend on the previous kernel, so with PDL its latency overlaps
    //          the producer's tail. Do NOT touch x or y here.
    // TODO(2): let the next kernel launch: cudaTriggerProgrammaticLaunchCompletion().
    //          Doing it early (even before your own wait) is safe because the dependent's
    //          own wait still waits for this whole grid to finish and its writes to be
    //          visible.
    // TODO(3): wait for the previous kernel: cudaGridDependencySynchronize() (or
    //          asm volatile("griddepcontrol.wait;" ::: "memory")). Every thread, before
    //          its first read of x and its first write of y.
    // TODO(4): the norm (lesson 4): one block per row for decode sizes (grid-stride loop
    //          over rows, int64_t offsets), VEC-wide loads of the row kept in registers,
    //          the sum of squares in fp32, reduced across the block.
    // TODO(5): inv_rms = rsqrtf(sum / cols + eps); write y = x * inv_rms * weight.
#endif
}

}  // namespace

template <typename T>
cudaError_t rmsnorm(const T* x, const T* weight, T* y, int64_t rows, int64_t cols, float eps, bool use_pdl,
                    cudaStream_t stream) {
    // TODO(6): rows == 0 returns cudaSuccess without a launch; reject cols outside 1..65536
    //          and devices below compute capability 9.0 (cudaDeviceGetAttribute).
    // TODO(7): pick the vector width (16 / sizeof(T) halved until it divides cols and the
    //          addresses of x, weight and y are aligned to it) and the block size from cols.
    // TODO(8): when use_pdl, give the launch one attribute:
    //          cudaLaunchAttributeProgrammaticStreamSerialization with
    //          val.programmaticStreamSerializationAllowed = 1 (config.attrs / numAttrs).
    (void)use_pdl;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(32);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, rmsnorm_pdl_kernel<T>, x, weight, y, rows, cols, eps);
}

}  // namespace workbook::lesson7
