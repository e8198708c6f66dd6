/**
 * @file production_norm.cu
 * @brief Lesson 9 exercise: the production norm, every option behind one validated descriptor.
 *
 * This is the only file you edit for lesson 9. Build and grade it with
 *     make lesson9 && ./grade lesson9
 * and ask for a hint with `./grade lesson9 --hint` (ask again for the next one).
 *
 * The contract is the header grader/include/workbook/production_norm.h (read it whole: it is
 * the library's public interface). In short, per row of cols elements, in fp32:
 *     s            = x + residual (x alone without a residual)
 *     residual_out = s rounded to T                          (optional)
 *     mean         = sum(s) / cols  (LayerNorm; 0 for RMSNorm)
 *     rstd         = 1 / sqrt(sum((s - mean)^2) / cols + eps) (optional output, fp32)
 *     y            = (s - mean) * rstd * weight + bias       (bias optional)
 * x is 2-D [rows, cols] or 3-D [batch, heads, cols] with element strides on every dimension
 * but the last; T is f32, f16 or bf16; weight and bias are each T or f32. y may be exactly x,
 * residual_out exactly residual; any other overlap of an output is refused.
 *
 * norm_create validates the problem and returns the first broken rule as a Status (setting
 * *out to nullptr), or success with a descriptor that holds the launch plan. It does no
 * device work. norm_launch launches on `stream` only (rows = 0: nothing, cudaSuccess);
 * norm_destroy frees the descriptor.
 *
 * As shipped it accepts every problem and launches a kernel that writes nothing, so every
 * case fails.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "workbook/production_norm.h"

namespace workbook::lesson9 {
namespace {

// TODO(1): the kernel's arguments: pointers, rows, cols, the strides of every 2-D/3-D tensor
//          (row r of a 3-D tensor starts at (r / heads) * stride0 + (r % heads) * stride1),
//          mode, eps and which parameters are stored in fp32.
struct Params {
    int64_t rows = 0;
};

__global__ void norm_kernel(Params p) {
    // TODO(2): one row per thread group. Load x (and residual) of the whole row into
    //          registers before storing anything: y may be x, residual_out may be residual.
    // TODO(3): s = x + residual in fp32; write residual_out = T(s) when asked.
    // TODO(4): LayerNorm: the mean first, then sum((s - mean)^2), both reduced over the row.
    //          RMSNorm: mean = 0. Not E[s^2] - E[s]^2: it cancels when the mean is large.
    // TODO(5): rstd = rsqrt(var + eps); write it (fp32) once per row when asked.
    // TODO(6): y = (s - mean) * rstd * weight + bias, the weight and bias read as T or as
    //          float as the descriptor says, rounded to T.
    (void)p;
}

}  // namespace

/// TODO(7): what the descriptor keeps: the kernel's arguments and the launch plan.
struct NormDescriptor {
    Params params;
};

Status norm_create(const NormProblem& problem, NormDescriptor** out) {
    // TODO(8): check every rule of production_norm.h in the order of Status's values and
    //          return the first broken one with *out = nullptr: ranks, negative dimensions,
    //          shapes, last stride 1, rows apart, dtypes, cols, overlaps, eps, mode.
    // TODO(9): choose the vector width (cols, strides and every pointer allow it) and the
    //          threads per row once, here.
    (void)problem;
    if (!out) return Status::missing_tensor;
    *out = new NormDescriptor{};
    return Status::success;
}

cudaError_t norm_launch(const NormDescriptor* desc, cudaStream_t stream) {
    // TODO(10): rows == 0 returns cudaSuccess without a launch; launch the planned kernel.
    norm_kernel<<<1, 32, 0, stream>>>(desc->params);
    return cudaGetLastError();
}

void norm_destroy(NormDescriptor* desc) { delete desc; }

}  // namespace workbook::lesson9
