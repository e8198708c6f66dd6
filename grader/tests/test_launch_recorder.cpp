// The launch recorder sees a submission's launches (grid, block, stream) through the exported
// hooks, whether or not a GPU is present: the probe's launches are refused either way.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "launch/launch_recorder.h"

using namespace workbook;

namespace {

using ProbeFn = cudaError_t (*)(cudaStream_t);

ProbeFn probe(const char* name) {
    // RTLD_LOCAL, as the grader opens submissions.
    static void* handle = dlopen(WORKBOOK_LAUNCH_PROBE, RTLD_NOW | RTLD_LOCAL);
    if (!handle) return nullptr;
    return reinterpret_cast<ProbeFn>(dlsym(handle, name));
}

}  // namespace

TEST(LaunchRecorder, SeesTheTripleChevronLaunchOfALibrary) {
    ProbeFn fn = probe("probe_grid_y");
    ASSERT_NE(fn, nullptr) << dlerror();
    // A valid handle that is not the legacy stream: the runtime reads it on a GPU before refusing the launch.
    cudaStream_t stream = cudaStreamPerThread;
    LaunchRecording rec;
    fn(stream);
    rec.stop();
    cudaGetLastError();
    ASSERT_EQ(rec.launches().size(), 1u);
    const RecordedLaunch& l = rec.launches()[0];
    EXPECT_EQ(l.shape.grid[1], 70001u);
    EXPECT_EQ(l.shape.block[0], 256u);
    EXPECT_FALSE(l.shape.from_config);
    EXPECT_EQ(l.stream, stream);
    EXPECT_NE(l.result, cudaSuccess);
    EXPECT_NE(explain_launch_limits(l.shape, LaunchLimits{}).find("gridDim.y = 70001"), std::string::npos);
}

TEST(LaunchRecorder, SeesALaunchConfigWithItsStreamUnset) {
    ProbeFn fn = probe("probe_config_unset");
    ASSERT_NE(fn, nullptr) << dlerror();
    LaunchRecording rec;
    fn(cudaStreamPerThread);
    rec.stop();
    cudaGetLastError();
    ASSERT_EQ(rec.launches().size(), 1u);
    const RecordedLaunch& l = rec.launches()[0];
    EXPECT_TRUE(l.shape.from_config);
    EXPECT_EQ(l.stream, nullptr);
    EXPECT_EQ(l.shape.block[0], 2048u);  // refused on any GPU: no kernel runs
    EXPECT_EQ(describe_stream(l.stream), "the legacy default stream (stream 0)");
}

TEST(LaunchRecorder, RecordsNothingOutsideARecording) {
    ProbeFn fn = probe("probe_grid_y");
    ASSERT_NE(fn, nullptr);
    fn(nullptr);
    cudaGetLastError();
    LaunchRecording rec;
    EXPECT_TRUE(rec.launches().empty());
}
