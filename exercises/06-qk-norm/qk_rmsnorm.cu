/**
 * @file qk_rmsnorm.cu
 * @brief Lesson 6 exercise: per-head RMSNorm of q or k, in place inside a fused qkv tensor.
 *
 * This is the only file you edit for lesson 6. Build and grade it with
 *     make lesson6 && ./grade lesson6
 * and ask for a hint with `./grade lesson6 --hint` (ask again for the next one).
 *
 * Contract: x is a [tokens, heads, head_dim] view. Head (t, h) starts at
 *     x + t * x_token_stride + h * x_head_stride
 * (and likewise in y with y's strides) and holds head_dim contiguous elements. For every
 * head: y = v * rsqrt(mean(v^2) + eps) * weight, v the head's elements, weight of length
 * head_dim, fp32 accumulation, T = float, __half or __nv_bfloat16. For the q slice of a
 * fused qkv tensor, x_token_stride = (heads + 2 * kv_heads) * head_dim and
 * x_head_stride = head_dim; the k and v parts between tokens are not yours: never write
 * them. y is either exactly x (same pointer and strides: in place) or does not overlap it.
 * tokens, heads >= 0 (either 0 launches nothing, returns cudaSuccess; tokens * heads may pass
 * 2^32); head_dim 1..65536 (usually 64, 128 or 256; odd must work). Pointers and strides may be aligned to the
 * element size only. Launch on `stream` only and return the launch's error code.
 *
 * As shipped it compiles and launches a kernel that writes nothing, so every case fails.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace workbook::lesson6 {
namespace {

// TODO(1): bring over lesson 4's helpers: conversions, a VEC-wide Pack, a sub-warp sum.

template <typename T>
__global__ void qk_rmsnorm_kernel(const T* x, int64_t x_token_stride, int64_t x_head_stride, const T* weight, T* y,
                                  int64_t y_token_stride, int64_t y_head_stride, int64_t tokens, int64_t heads,
                                  int64_t head_dim, float eps) {
    // TODO(2): number the heads 0 .. tokens*heads - 1 and give each one a warp, or a few
    //          lanes of a warp when head_dim is small (128 fp16 elements are 16 vectors of
    //          16 bytes: 4 lanes with 4 vectors each). Many heads per block.
    // TODO(3): from the head number, find (token, head) and the element offset of the head
    //          in x and in y: token * token_stride + head * head_stride, in int64_t.
    // TODO(4): load the whole head before writing any of it (y may be x); sum v*v in fp32
    //          and reduce across the head's lanes with __shfl_xor_sync.
    // TODO(5): write y = v * inv_rms * weight, head_dim elements, nothing else.
}

}  // namespace

template <typename T>
cudaError_t qk_rmsnorm(const T* x, int64_t x_token_stride, int64_t x_head_stride, const T* weight, T* y,
                       int64_t y_token_stride, int64_t y_head_stride, int64_t tokens, int64_t heads,
                       int64_t head_dim, float eps, cudaStream_t stream) {
    // TODO(6): tokens == 0 or heads == 0 returns cudaSuccess without a launch.
    // TODO(7): the vector width must divide head_dim and suit x, y and weight, the token
    //          strides (when tokens > 1) and the head strides (when heads > 1).
    qk_rmsnorm_kernel<T><<<1, 32, 0, stream>>>(x, x_token_stride, x_head_stride, weight, y, y_token_stride,
                                               y_head_stride, tokens, heads, head_dim, eps);
    return cudaGetLastError();
}

}  // namespace workbook::lesson6
