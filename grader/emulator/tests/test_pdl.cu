/// @file test_pdl.cu
/// @brief Programmatic dependent launch on the emulator: a grid launched with programmatic
///        stream serialization starts before the kernel ahead of it has written anything, every
///        time; its grid-dependency wait is where that kernel's writes appear.
#include <string>
#include <vector>

#include "test_support.h"

namespace {

using emu_test::Buffer;
using emu_test::Emulator;

/// The producer: x[i] = i + 1 for every i.
__global__ void producer_kernel(int* x, int n) {
    cudaTriggerProgrammaticLaunchCompletion();  // dependents may start at once
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = i + 1;
}

/// Reads x before and after its grid-dependency wait.
__global__ void dependent_kernel(const int* x, int* before, int* after, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) before[i] = x[i];
    cudaGridDependencySynchronize();
    if (i < n) after[i] = x[i];
}

/// The same with the PTX form of the wait, which the source rewrite turns into the same call.
__global__ void dependent_asm_kernel(const int* x, int* before, int* after, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) before[i] = x[i];
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) after[i] = x[i];
}

/// Never waits: every read may come before the producer's writes.
__global__ void no_wait_kernel(const int* x, int* before, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) before[i] = x[i];
}

template <typename... P, typename... A>
cudaError_t launch(bool programmatic, unsigned blocks, unsigned threads, cudaStream_t s, void (*kernel)(P...),
                   A... args) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.stream = s;
    config.attrs = &attr;
    config.numAttrs = programmatic ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

constexpr int kN = 64;

TEST_F(Emulator, ReadsBeforeTheGridDependencyWaitMissTheProducersWrites) {
    // Three times: the outcome is the same on every run, not a matter of timing.
    for (int run = 0; run < 3; ++run) {
        Buffer<int> x(kN), before(kN), after(kN);
        producer_kernel<<<2, 32>>>(x.d, kN);
        ASSERT_EQ(launch(true, 1, kN, nullptr, dependent_kernel, x.d, before.d, after.d, kN), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto b = before.get(), a = after.get();
        for (int i = 0; i < kN; ++i) {
            EXPECT_EQ(b[i], 0) << "before the wait, element " << i << " (run " << run << ")";
            EXPECT_EQ(a[i], i + 1) << "after the wait, element " << i;
        }
    }
}

TEST_F(Emulator, WithoutTheAttributeStreamOrderHoldsAndTheWaitReturnsAtOnce) {
    Buffer<int> x(kN), before(kN), after(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    ASSERT_EQ(launch(false, 1, kN, nullptr, dependent_kernel, x.d, before.d, after.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto b = before.get(), a = after.get();
    for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(b[i], i + 1) << i;
        EXPECT_EQ(a[i], i + 1) << i;
    }
}

TEST_F(Emulator, ThePtxWaitIsTheSameWait) {
    Buffer<int> x(kN), before(kN), after(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    ASSERT_EQ(launch(true, 1, kN, nullptr, dependent_asm_kernel, x.d, before.d, after.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(before.get()[5], 0);
    EXPECT_EQ(after.get()[5], 6);
}

TEST_F(Emulator, AGridThatNeverWaitsSeesNoneOfTheProducersWritesWhichStillHappen) {
    Buffer<int> x(kN), before(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    ASSERT_EQ(launch(true, 2, 32, nullptr, no_wait_kernel, x.d, before.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto b = before.get(), xs = x.get();
    for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(b[i], 0) << i;
        EXPECT_EQ(xs[i], i + 1) << i;  // the producer ran after the grid that did not wait for it
    }
}

TEST_F(Emulator, ACapturedGraphKeepsTheProgrammaticEdge) {
    Buffer<int> x(kN), before(kN), after(kN);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    producer_kernel<<<2, 32, 0, s>>>(x.d, kN);
    ASSERT_EQ(launch(true, 1, kN, s, dependent_kernel, x.d, before.d, after.d, kN), cudaSuccess);
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(before.get()[7], 0);
    EXPECT_EQ(after.get()[7], 8);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
}

/// y = x + 100, waiting for x's producer first; then lets its own dependents go.
__global__ void middle_kernel(const int* x, int* y, int n) {
    cudaTriggerProgrammaticLaunchCompletion();
    cudaGridDependencySynchronize();
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i] + 100;
}

TEST_F(Emulator, AChainOfProgrammaticLaunchesWaitsLinkByLink) {
    // producer -> middle (programmatic) -> dependent (programmatic): the last grid reads y before
    // its wait (middle has not run) and after it (middle has, after its own wait on the producer).
    Buffer<int> x(kN), y(kN), before(kN), after(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    ASSERT_EQ(launch(true, 1, 32, nullptr, middle_kernel, x.d, y.d, kN), cudaSuccess);
    ASSERT_EQ(launch(true, 1, kN, nullptr, dependent_kernel, y.d, before.d, after.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto b = before.get(), a = after.get();
    for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(b[i], 0) << i;
        EXPECT_EQ(a[i], i + 101) << i;
    }
}

TEST_F(Emulator, AnyOtherStreamWorkRunsTheHeldKernelFirst) {
    // A copy between a kernel and a programmatic launch: the launch depends on the copy, which
    // comes after the kernel, so the kernel's writes are all there.
    Buffer<int> x(kN), z(kN), before(kN), after(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    ASSERT_EQ(cudaMemcpyAsync(z.d, x.d, kN * sizeof(int), cudaMemcpyDeviceToDevice, nullptr), cudaSuccess);
    ASSERT_EQ(launch(true, 1, kN, nullptr, dependent_kernel, z.d, before.d, after.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(before.get()[9], 10);
    EXPECT_EQ(after.get()[9], 10);
}

TEST_F(Emulator, APlainModeDependentRunsItsPrerequisiteAtItsFirstWait) {
    // The grader's own kernels run in plain mode (one call per thread, no fibers): a thread cannot
    // be paused, so the held kernel runs at the first thread's wait, and every read after it sees
    // its writes.
    Buffer<int> x(kN), before(kN), after(kN);
    producer_kernel<<<2, 32>>>(x.d, kN);
    emu::LaunchSpec spec;
    spec.grid = dim3(1);
    spec.block = dim3(kN);
    spec.mode = emu::LaunchMode::plain;
    spec.programmatic = true;
    ASSERT_EQ(emu::launch_kernel(spec, dependent_kernel, x.d, before.d, after.d, kN), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto b = before.get(), a = after.get();
    EXPECT_EQ(b[0], 0);
    for (int i = 0; i < kN; ++i) EXPECT_EQ(a[i], i + 1) << i;
}

}  // namespace
