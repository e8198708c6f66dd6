// Lesson 11's contract on the CPU: the reference refuses every invalid call of the grader's table
// with cudaErrorInvalidValue before any device work (so no GPU is needed), in every element type,
// accepts every valid call beside them (eps = 0, a single row with a stride below cols), and a call
// with rows = 0 succeeds without touching anything.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <cstdint>
#include <limits>

#include "lessons/11-fp8-quant/error_cases.h"
#include "lessons/11-fp8-quant/api.h"

using namespace workbook;

namespace {

const api::Lesson11* reference_table() {
    static const api::Lesson11* table = [] {
        void* handle = dlopen(WORKBOOK_LESSON11_REFERENCE, RTLD_NOW | RTLD_LOCAL);
        if (!handle) return static_cast<const api::Lesson11*>(nullptr);
        auto get = reinterpret_cast<const api::Lesson11* (*)()>(dlsym(handle, "workbook_lesson11_api"));
        return get ? get() : nullptr;
    }();
    return table;
}

/// Fake, well-aligned addresses: a refused call must not touch them, and rows = 0 touches nothing.
template <typename T>
T* fake(int slot) {
    return reinterpret_cast<T*>(uintptr_t(0x7f0000000000ull) + uintptr_t(slot) * (16u << 20));
}

template <typename T>
cudaError_t call(api::Fp8QuantFn<T> fn, const fp8::ErrorCase& e) {
    return fn(e.null_x ? nullptr : fake<T>(1), e.x_stride, e.null_weight ? nullptr : fake<T>(2),
              e.null_q ? nullptr : fake<__nv_fp8_e4m3>(3), e.q_stride, e.null_scale ? nullptr : fake<float>(4), e.rows,
              e.cols, e.eps, e.clip, nullptr);
}

}  // namespace

TEST(Fp8Contract, ReferenceRefusesEveryInvalidCall) {
    const api::Lesson11* t = reference_table();
    ASSERT_NE(t, nullptr) << "cannot open " << WORKBOOK_LESSON11_REFERENCE << ": " << dlerror();
    int checked = 0;
    for (const fp8::ErrorCase& e : fp8::error_cases()) {
        EXPECT_EQ(call(t->f32, e), cudaErrorInvalidValue) << e.name << " (f32): " << e.what;
        EXPECT_EQ(call(t->f16, e), cudaErrorInvalidValue) << e.name << " (f16): " << e.what;
        EXPECT_EQ(call(t->bf16, e), cudaErrorInvalidValue) << e.name << " (bf16): " << e.what;
        ++checked;
    }
    EXPECT_GE(checked, 14);
}

TEST(Fp8Contract, ReferenceAcceptsEveryValidBoundary) {
    const api::Lesson11* t = reference_table();
    ASSERT_NE(t, nullptr);
    // Without a device an accepted call fails at its launch, never with cudaErrorInvalidValue. With
    // one, the fake addresses would be dereferenced: the grader's cases of the same names run there.
    int devices = 0;
    if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0)
        GTEST_SKIP() << "a GPU is present: the grader's cases check these calls on real buffers";
    (void)cudaGetLastError();
    for (const fp8::ErrorCase& e : fp8::valid_boundary_calls()) {
        const cudaError_t got[] = {call(t->f32, e), call(t->f16, e), call(t->bf16, e)};
        for (cudaError_t g : got) {
            if (e.rows == 0) EXPECT_EQ(g, cudaSuccess) << e.name << ": " << e.what;
            else EXPECT_NE(g, cudaErrorInvalidValue) << e.name << " was refused: " << e.what;
        }
        (void)cudaGetLastError();
    }
}

TEST(Fp8Contract, NoRowsIsSuccessWithoutWork) {
    const api::Lesson11* t = reference_table();
    ASSERT_NE(t, nullptr);
    fp8::ErrorCase ok{"rows_zero", "rows = 0"};
    ok.rows = 0;
    EXPECT_EQ(call(t->bf16, ok), cudaSuccess);
    // With no rows, null pointers are not an error: there is nothing to read or write.
    ok.null_x = ok.null_q = ok.null_scale = ok.null_weight = true;
    EXPECT_EQ(call(t->f32, ok), cudaSuccess);
}

TEST(Fp8Contract, EveryRuleOfTheHeaderHasACase) {
    // The refusals rmsnorm_fp8.h lists, each at least once in the grader's table.
    bool rows = false, cols = false, stride = false, nulls = false, eps = false, clip = false;
    for (const fp8::ErrorCase& e : fp8::error_cases()) {
        rows |= e.rows < 0;
        cols |= e.cols < 1 || e.cols > 65536;
        stride |= e.x_stride < e.cols || e.q_stride < e.cols;
        nulls |= e.null_x || e.null_weight || e.null_q || e.null_scale;
        eps |= !(e.eps >= 0);
        clip |= !(e.clip > 0);
    }
    EXPECT_TRUE(rows && cols && stride && nulls && eps && clip);
}

TEST(Fp8Contract, EveryBoundaryHasBothSides) {
    // Each refusal's first invalid value, and the valid value beside it.
    bool eps_smallest_negative = false, clip_zero = false, stride_two_rows = false;
    for (const fp8::ErrorCase& e : fp8::error_cases()) {
        eps_smallest_negative |= e.eps < 0 && e.eps > -1e-30f;
        clip_zero |= e.clip == 0.0f;
        stride_two_rows |= e.rows == 2 && (e.x_stride == e.cols - 1 || e.q_stride == e.cols - 1);
    }
    EXPECT_TRUE(eps_smallest_negative && clip_zero && stride_two_rows);
    bool eps_zero = false, x_single_row = false, q_single_row = false, no_rows_null = false;
    for (const fp8::ErrorCase& e : fp8::valid_boundary_calls()) {
        eps_zero |= e.eps == 0.0f;
        x_single_row |= e.rows == 1 && e.x_stride < e.cols;
        q_single_row |= e.rows == 1 && e.q_stride < e.cols;
        no_rows_null |= e.rows == 0 && e.null_x && e.null_weight && e.null_q && e.null_scale;
        // A valid call is not also in the table of refusals.
        for (const fp8::ErrorCase& bad : fp8::error_cases()) EXPECT_NE(bad.name, e.name);
    }
    EXPECT_TRUE(eps_zero && x_single_row && q_single_row && no_rows_null);
}
