/// @file device.h
/// @brief What kernel code sees on the emulator: thread indices, barriers, warp
///        collectives, shared memory, atomics and the intrinsics the lessons use.
///
/// Each CUDA thread is a fiber; the calls below are where a fiber may wait for others.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emu/qualifiers.h"
#include "emu/vector_types.h"

#define EMU_TLS extern thread_local __attribute__((tls_model("initial-exec")))

// The running thread's indices; the scheduler sets them before it resumes a fiber.
EMU_TLS uint3 threadIdx;
EMU_TLS uint3 blockIdx;
EMU_TLS uint3 blockDim;
EMU_TLS uint3 gridDim;
constexpr int warpSize = 32;

namespace emu {

/// The warp-level operations, all executed in lockstep by the lanes of their mask.
enum class WarpOp : int { sync, shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all, activemask, match_any };

/// Waits for every live thread of the block; the block's shared-memory epoch advances.
void syncthreads();
/// Lockstep point of the lanes in `mask`; returns this lane's result bits.
uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int param, int width);
/// This block's copy of the static __shared__ variable identified by `key`. `name`, the size of
/// one element and the number of array dimensions let a report name an element ("partials[3]").
void* shared_slot(const void* key, std::size_t bytes, std::size_t align, const char* name = nullptr,
                  std::size_t element = 0, int dims = 0);
/// This block's dynamic shared memory (the launch's smem argument), declared as `name` with
/// elements of `element` bytes (for reports).
void* dynamic_shared(const char* name = nullptr, std::size_t element = 0);
/// Lesson 7: waits until the grid this one depends on has finished (programmatic dependent launch).
void grid_dependency_wait();
/// Lesson 7: lets the dependent grid start.
void trigger_dependents();
/// Lesson 8, thread-block clusters: the cluster barrier (arrive, wait, or both), the launch's
/// cluster dimensions, this block's rank in its cluster, and distributed shared memory.
void cluster_arrive();
void cluster_wait();
void cluster_sync();
dim3 cluster_dims();
unsigned cluster_block_rank();
/// The address `addr` (in this block's shared memory) has in the shared memory of block `rank`.
void* map_shared_rank(const void* addr, unsigned rank);
/// The rank of the cluster block whose shared memory holds `addr`.
unsigned query_shared_rank(const void* addr);
/// First statement of a kernel declared with __cluster_dims__ (see tools/emu_rewrite.py).
void kernel_cluster_dims(unsigned x, unsigned y = 1, unsigned z = 1);
/// Lets other fibers run (used by spin loops such as __nanosleep).
void yield_thread();
/// `cp.async.bulk.prefetch.L2.global [addr], bytes;`: a hint that moves no value, but the GPU
/// still requires a 16-byte aligned address, a size that is a positive multiple of 16 and a range
/// inside one device buffer, so those are checked as a 16-byte access would be.
void bulk_prefetch_l2(const void* addr, long long bytes);

template <typename T>
inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

/// The static-shared-memory key of one declaration in one template instantiation.
template <typename Tag>
struct SharedKey {
    static inline char key;
};

}  // namespace emu

// ---- barriers and warp collectives -------------------------------------------------------
// Always inlined, so the emulator's reports name the kernel's line, not this header's.
#define EMU_INLINE inline __attribute__((always_inline))
EMU_INLINE void __syncthreads() { ::emu::syncthreads(); }
EMU_INLINE int __syncthreads_count(int) = delete;
EMU_INLINE void __syncwarp(unsigned mask = 0xffffffffu) { ::emu::warp_op(::emu::WarpOp::sync, mask, 0, 0, 32); }
EMU_INLINE unsigned __activemask() { return static_cast<unsigned>(::emu::warp_op(::emu::WarpOp::activemask, 0, 0, 0, 32)); }
EMU_INLINE unsigned __ballot_sync(unsigned mask, int pred) {
    return static_cast<unsigned>(::emu::warp_op(::emu::WarpOp::ballot, mask, pred != 0, 0, 32));
}
EMU_INLINE int __any_sync(unsigned mask, int pred) { return static_cast<int>(::emu::warp_op(::emu::WarpOp::any, mask, pred != 0, 0, 32)); }
EMU_INLINE int __all_sync(unsigned mask, int pred) { return static_cast<int>(::emu::warp_op(::emu::WarpOp::all, mask, pred != 0, 0, 32)); }

template <typename T>
EMU_INLINE T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::WarpOp::shfl_idx, mask, ::emu::to_bits(var), src_lane, width));
}
template <typename T>
EMU_INLINE T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::WarpOp::shfl_xor, mask, ::emu::to_bits(var), lane_mask, width));
}
template <typename T>
EMU_INLINE T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return ::emu::from_bits<T>(
        ::emu::warp_op(::emu::WarpOp::shfl_up, mask, ::emu::to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
EMU_INLINE T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return ::emu::from_bits<T>(
        ::emu::warp_op(::emu::WarpOp::shfl_down, mask, ::emu::to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
EMU_INLINE unsigned __match_any_sync(unsigned mask, T value) {
    return static_cast<unsigned>(::emu::warp_op(::emu::WarpOp::match_any, mask, ::emu::to_bits(value), 0, 32));
}
EMU_INLINE unsigned __reduce_add_sync(unsigned mask, unsigned v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(mask, v, o);
    return v;
}

// ---- fences, timing, programmatic dependent launch ----------------------------------------
EMU_INLINE void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
EMU_INLINE void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
EMU_INLINE void __nanosleep(unsigned) { ::emu::yield_thread(); }
EMU_INLINE void cudaGridDependencySynchronize() { ::emu::grid_dependency_wait(); }
EMU_INLINE void cudaTriggerProgrammaticLaunchCompletion() { ::emu::trigger_dependents(); }

// ---- atomics (real ones: blocks run in parallel on the CPU's cores) ------------------------
template <typename T>
inline T atomicAdd(T* p, T v) {
    if constexpr (std::is_floating_point_v<T>) {
        T old;
        __atomic_load(p, &old, __ATOMIC_RELAXED);
        T want;
        do {
            want = old + v;
        } while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        return old;
    } else {
        return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
}
template <typename T>
inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicCAS(T* p, T expected, T desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}
template <typename T>
inline T atomicMin(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}
template <typename T>
inline T atomicMax(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}

// ---- bit casts and math -----------------------------------------------------------------
inline float __int_as_float(int v) { return ::emu::from_bits<float>(static_cast<uint32_t>(v)); }
inline float __uint_as_float(unsigned v) { return ::emu::from_bits<float>(v); }
inline int __float_as_int(float v) { return static_cast<int>(::emu::to_bits(v)); }
inline unsigned __float_as_uint(float v) { return static_cast<unsigned>(::emu::to_bits(v)); }
inline double __longlong_as_double(long long v) { return ::emu::from_bits<double>(static_cast<uint64_t>(v)); }
inline long long __double_as_longlong(double v) { return static_cast<long long>(::emu::to_bits(v)); }
/// The GPU's rsqrtf is within 2 ulp; the correctly rounded value is inside that bound.
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
inline float __frsqrt_rn(float v) { return 1.0f / std::sqrt(v); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float v) { return std::exp(v); }
inline float __logf(float v) { return std::log(v); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __saturatef(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline unsigned __brev(unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}
using std::isinf;
using std::isnan;

// ---- cache-hinted loads and stores ---------------------------------------------------------
// The hint only steers the GPU's caches; the access itself is a plain load or store of the
// whole value, checked like any other (bounds, and alignment to the type's size: a float4 at
// an address that is not a multiple of 16 is a misaligned address, as on the GPU). Always
// inlined, so a report names the kernel's line.
template <typename T>
EMU_INLINE T __ldg(const T* p) { return *p; }
template <typename T>
EMU_INLINE T __ldcs(const T* p) { return *p; }
template <typename T>
EMU_INLINE T __ldcg(const T* p) { return *p; }
template <typename T>
EMU_INLINE T __ldca(const T* p) { return *p; }
template <typename T>
EMU_INLINE T __ldlu(const T* p) { return *p; }
template <typename T>
EMU_INLINE T __ldcv(const T* p) { return *p; }
template <typename T>
EMU_INLINE void __stcs(T* p, T v) { *p = v; }
template <typename T>
EMU_INLINE void __stcg(T* p, T v) { *p = v; }
template <typename T>
EMU_INLINE void __stwb(T* p, T v) { *p = v; }
template <typename T>
EMU_INLINE void __stwt(T* p, T v) { *p = v; }

// ---- inline PTX with an L2 cache policy (tools/emu_rewrite.py) ------------------------------
namespace emu {
/// N 32-bit words that move as one access, aligned as the PTX vector load requires.
template <int N>
struct alignas(4 * N) HintedWords {
    uint32_t w[N];
};

/// `ld.global{.nc}{.L1::...}.L2::cache_hint{.v2,.v4}.b32 {dests}, [addr], policy;`: the policy
/// only ranks lines for eviction from the GPU's L2, so here it is one plain load of the whole
/// width into the destinations, checked for bounds and alignment like any other.
template <typename... Dest>
EMU_INLINE void cache_hinted_load(const void* address, Dest&... dest) {
    constexpr int kWords = static_cast<int>(sizeof...(Dest));
    static_assert(kWords == 1 || kWords == 2 || kWords == 4, "PTX loads 1, 2 or 4 words at once");
    static_assert(((sizeof(Dest) == 4) && ...), "each destination of a .b32 load is a 32-bit register");
    const HintedWords<kWords> v = *static_cast<const HintedWords<kWords>*>(address);
    int i = 0;
    ((std::memcpy(&dest, &v.w[i++], 4)), ...);
}
}  // namespace emu
