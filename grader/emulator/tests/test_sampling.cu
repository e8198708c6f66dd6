/// @file test_sampling.cu
/// @brief Sampled calls: lazy device memory given contents on first touch, and launches that run a
///        sample of their blocks, the blocks that write the target rows among them.
#include <cstring>
#include <vector>

#include <cuda_fp16.h>

#include "emu/control.h"
#include "test_support.h"

namespace {

using emu_test::Emulator;

constexpr int kCols = 16;
constexpr float kUnwritten = -1.0f;

/// A lazy tensor of `rows` rows of kCols floats: every element reads kUnwritten until written.
struct LazyRows {
    float* d = nullptr;
    int64_t rows;
    explicit LazyRows(int64_t n, const std::vector<int64_t>& targets) : rows(n) {
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), rows * kCols * sizeof(float)), cudaSuccess);
        std::vector<emu::TargetRow> rows_checked;
        for (int64_t r : targets)
            rows_checked.push_back(emu::TargetRow{r, r * kCols * sizeof(float), (r + 1) * kCols * sizeof(float)});
        emu::add_lazy_range(
            d, rows * kCols * sizeof(float),
            [](std::size_t, std::size_t bytes, unsigned char* out) {
                for (std::size_t i = 0; i < bytes; i += 4) std::memcpy(out + i, &kUnwritten, 4);
            },
            [](std::size_t offset) { return static_cast<int64_t>(offset / (kCols * sizeof(float))); }, rows_checked);
    }
    ~LazyRows() { cudaFree(d); }
    /// Row r's first element (materialized first: the test reads it from the host).
    float first_of(int64_t r) const {
        emu::materialize(d + r * kCols, kCols * sizeof(float));
        float v = 0;
        cudaMemcpy(&v, d + r * kCols, sizeof v, cudaMemcpyDeviceToHost);
        return v;
    }
};

/// Block b writes row b (a block per row), or, with `stride`, rows b, b + gridDim.x, ... (a grid
/// walking the rows); rows at or past `last` are skipped (a kernel that does less work than asked).
__global__ void write_rows(float* y, int64_t rows, int64_t last, bool stride) {
    for (int64_t r = blockIdx.x; r < rows && r < last; r += stride ? gridDim.x : rows)
        for (int c = threadIdx.x; c < kCols; c += blockDim.x) y[r * kCols + c] = static_cast<float>(r);
}

class Sampled : public Emulator {
protected:
    void SetUp() override { emu::begin_sampled_call(42); }
    void TearDown() override {
        emu::end_sampled_call();
        Emulator::TearDown();
    }
};

TEST_F(Sampled, ALazyRangeGetsItsContentsWhereTouchedOnly) {
    const int64_t rows = int64_t(1) << 22;  // 256 MiB, of which a few chunks are ever given contents
    LazyRows y(rows, {});
    write_rows<<<1, 32>>>(y.d + (rows - 1) * kCols, 1, 1, false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto touched = emu::touched_ranges(y.d);
    ASSERT_EQ(touched.size(), 1u);
    EXPECT_EQ(touched[0].second, static_cast<std::size_t>(rows * kCols * sizeof(float)));
    EXPECT_LE(touched[0].second - touched[0].first, std::size_t(64) << 10);
    EXPECT_EQ(y.first_of(rows - 1), 0.0f);
    EXPECT_EQ(y.first_of(rows - 2), kUnwritten) << "the rest of the chunk keeps its lazy contents";
    EXPECT_EQ(y.first_of(3), kUnwritten);
}

TEST_F(Sampled, ABlockPerRowLaunchRunsASampleThatWritesTheTargetRows) {
    const int64_t rows = 100000;
    const std::vector<int64_t> targets{0, 50000, 77777, rows - 1};
    LazyRows y(rows, targets);
    write_rows<<<static_cast<unsigned>(rows), 32>>>(y.d, rows, rows, false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto launches = emu::sampled_launches();
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].units, static_cast<uint64_t>(rows));
    EXPECT_LE(launches[0].run, 32u);
    for (int64_t r : targets) EXPECT_EQ(y.first_of(r), static_cast<float>(r)) << "target row " << r;
    EXPECT_EQ(y.first_of(12345), kUnwritten) << "a block outside the sample ran";
}

TEST_F(Sampled, AGridWalkingTheRowsWritesTheTargetRowsToo) {
    const int64_t rows = 100000;
    const std::vector<int64_t> targets{0, 50001, 77777, rows - 1};
    LazyRows y(rows, targets);
    write_rows<<<264, 32>>>(y.d, rows, rows, true);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int64_t r : targets) EXPECT_EQ(y.first_of(r), static_cast<float>(r)) << "target row " << r;
    EXPECT_LE(emu::sampled_launches().at(0).run, 32u);
}

TEST_F(Sampled, RowsAKernelSkipsStayUnwritten) {
    // A kernel that writes only the first half of the rows: the sample cannot make the last row
    // written, and the grader's check of it fails.
    const int64_t rows = 100000;
    LazyRows y(rows, {0, rows / 2 + 10, rows - 1});
    write_rows<<<static_cast<unsigned>(rows), 32>>>(y.d, rows, rows / 2, false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(y.first_of(0), 0.0f);
    EXPECT_EQ(y.first_of(rows - 1), kUnwritten);
    EXPECT_EQ(y.first_of(rows / 2 + 10), kUnwritten);
}

/// Reads element `at` of x (far into a sparse tensor) and stores it.
__global__ void read_far(const float* x, int64_t at, float* out) { *out = x[at]; }

TEST_F(Sampled, ATensorPastTwoToTheThirtyOneElementsCostsOnlyWhatIsTouched) {
    // 2^31 + 2^20 floats: 8 GiB reserved, one chunk given contents.
    const int64_t n = (int64_t(1) << 31) + (int64_t(1) << 20);
    float* x = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)), cudaSuccess);
    emu::add_lazy_range(x, n * sizeof(float),
                        [](std::size_t offset, std::size_t bytes, unsigned char* out) {
                            for (std::size_t i = 0; i < bytes; i += 4) {
                                const float v = static_cast<float>((offset + i) / 4 % 1000);
                                std::memcpy(out + i, &v, 4);
                            }
                        },
                        nullptr, {});
    float* out = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(float)), cudaSuccess);
    read_far<<<1, 1>>>(x, n - 7, out);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    float v = 0;
    ASSERT_EQ(cudaMemcpy(&v, out, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(v, static_cast<float>((n - 7) % 1000));
    std::size_t touched = 0;
    for (const auto& [lo, hi] : emu::touched_ranges(x)) touched += hi - lo;
    EXPECT_LE(touched, std::size_t(64) << 10);
    cudaFree(out);
    cudaFree(x);
}

/// Widens a half passed by value: g++'s ThreadSanitizer pass does not instrument a load whose value
/// goes straight into a call's argument, so the emulator does not see this read of x.
__device__ __attribute__((noinline)) float widen(__half h) { return __half2float(h); }

__global__ void widen_at(const __half* x, int64_t at, float* out) { *out = widen(x[at]); }

/// Makes the n halves at x a lazy range whose element i holds i modulo 1000.
void add_lazy_halves(__half* x, int64_t n) {
    emu::add_lazy_range(x, n * sizeof(__half),
                        [](std::size_t offset, std::size_t bytes, unsigned char* out) {
                            for (std::size_t i = 0; i < bytes; i += 2) {
                                const __half v = __float2half(static_cast<float>((offset + i) / 2 % 1000));
                                std::memcpy(out + i, &v, 2);
                            }
                        },
                        nullptr, {});
}

TEST_F(Sampled, AReadTheCompilerDoesNotInstrumentStillSeesTheLazyContents) {
    // 2^20 halves, each holding its index modulo 1000; the read lands at a chunk's first byte, the
    // chunk untouched before (as the last element of a row after the row's instrumented loads).
    const int64_t n = int64_t(1) << 20;
    __half* x = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(__half)), cudaSuccess);
    add_lazy_halves(x, n);
    float* out = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(float)), cudaSuccess);
    const int64_t at = 5 * 32768;  // 64 KiB chunks of halves: the first element of the sixth
    widen_at<<<1, 1>>>(x, at, out);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    float v = -1;
    ASSERT_EQ(cudaMemcpy(&v, out, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(v, static_cast<float>(at % 1000));
    // The host's own reads (the grader's code) see the contents too, without materialize.
    EXPECT_EQ(__half2float(x[n - 1]), static_cast<float>((n - 1) % 1000));
    cudaFree(out);
    cudaFree(x);
}

/// Block 0 announces each chunk in `progress` and then reads it first (it fills the chunk); block 1
/// waits for the announcement, then a delay that varies from chunk to chunk, and reads the same
/// chunk, so that its read lands at every point of the fill in turn. Both read through widen
/// (uninstrumented); each value that is not the lazy contents counts in `wrong`.
__global__ void read_while_filled(const __half* x, int64_t chunks, int* progress, int* wrong) {
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t at = c * 32768 + 32760;  // near the chunk's end: the last bytes a copy writes
        if (blockIdx.x == 0) {
            atomicExch(&progress[c], 1);
        } else {
            // Bounded: where one worker runs both blocks, block 0 has finished before block 1 starts.
            for (int spin = 0; spin < (1 << 22) && atomicAdd(&progress[c], 0) == 0; ++spin) {
            }
            volatile unsigned delay = 0;
            for (unsigned k = 0; k < (static_cast<unsigned>(c) * 2654435761u) % 200000u; ++k) delay = delay + k;
        }
        if (widen(x[at]) != static_cast<float>(at % 1000)) atomicAdd(wrong, 1);
    }
}

TEST_F(Sampled, ReadsRacingAChunksFirstFillNeverSeeItEmpty) {
    // A chunk is filled once, by whichever thread touches it first. An uninstrumented read by
    // another thread while the chunk is being filled must see the contents, never the zeros of a
    // chunk made readable before its contents are in (that gave a correct kernel a wrong y). The
    // collision is a matter of timing: 2048 chunks give it many chances in one run.
    const int64_t chunks = 2048;
    const int64_t n = chunks * 32768;
    __half* x = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(__half)), cudaSuccess);
    add_lazy_halves(x, n);
    emu_test::Buffer<int> progress(chunks), wrong(1);
    read_while_filled<<<2, 1>>>(x, chunks, progress.d, wrong.d);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(wrong.get()[0], 0) << "reads saw a chunk before its contents were in";
    cudaFree(x);
}

}  // namespace
