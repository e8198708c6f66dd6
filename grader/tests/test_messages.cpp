// Every message class names its own cause: launch limits, wrong streams, grouped failures, the
// stub, and the gate's reason. The GPU side of each is exercised by the known-bad catalogue.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/poison.h"
#include "report/compare_report.h"
#include "report/failure_summary.h"
#include "report/guard_report.h"
#include "bench/gate_reason.h"
#include "launch/launch_diagnosis.h"

using namespace workbook;

namespace {

LaunchShape launch(uint64_t gx, uint64_t gy, uint64_t bx, size_t shared = 0) {
    LaunchShape l;
    l.grid[0] = gx, l.grid[1] = gy;
    l.block[0] = bx;
    l.shared_bytes = shared;
    return l;
}

CaseResult failed(const std::string& name, const std::string& message) {
    CaseResult c;
    c.name = name;
    c.message = message;
    c.detail = message + " (repetition 1 of 2)";
    c.cause = "launch";
    return c;
}

CaseResult passed(const std::string& name) {
    CaseResult c;
    c.name = name;
    c.passed = true;
    return c;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// Item 1: a launch the runtime refuses is named with its grid and block and the limit it broke.
TEST(LaunchMessages, GridYPastItsLimitIsNamed) {
    const std::string m = describe_failed_launch(launch(1, 70001, 256), "cudaErrorInvalidConfiguration",
                                                 "invalid configuration argument", LaunchLimits{}, false);
    EXPECT_TRUE(has(m, "a kernel launch (grid (1, 70001, 1), block (256, 1, 1)) was refused")) << m;
    EXPECT_TRUE(has(m, "cudaErrorInvalidConfiguration")) << m;
    EXPECT_TRUE(has(m, "gridDim.y = 70001 is past its limit of 65535")) << m;
    EXPECT_FALSE(has(m, "stream")) << m;
}

TEST(LaunchMessages, TooManyThreadsPerBlockIsNamed) {
    const std::string m = describe_failed_launch(launch(100, 1, 2048), "cudaErrorInvalidConfiguration",
                                                 "invalid configuration argument", LaunchLimits{}, false);
    EXPECT_TRUE(has(m, "2048 threads is past the limit of 1024 threads per block")) << m;
    EXPECT_FALSE(has(m, "stream")) << m;
}

TEST(LaunchMessages, ZeroBlocksOnRowsZeroIsNamed) {
    const std::string m = describe_failed_launch(launch(0, 1, 256), "cudaErrorInvalidConfiguration",
                                                 "invalid configuration argument", LaunchLimits{}, true);
    EXPECT_TRUE(has(m, "rows = 0 must return cudaSuccess and launch nothing, but the entry point launched a "
                       "kernel (grid (0, 1, 1), block (256, 1, 1)), which was refused")) << m;
    EXPECT_TRUE(has(m, "zero blocks")) << m;
}

TEST(LaunchMessages, SharedMemoryPastTheDefaultNeedsTheAttribute) {
    EXPECT_TRUE(has(explain_launch_limits(launch(1, 1, 128, 64 * 1024), LaunchLimits{}),
                    "cudaFuncAttributeMaxDynamicSharedMemorySize"));
    EXPECT_TRUE(has(explain_launch_limits(launch(1, 1, 128, 300 * 1024), LaunchLimits{}), "more than the device has"));
    EXPECT_EQ(explain_launch_limits(launch(1 << 30, 65535, 1024, 1024), LaunchLimits{}), "");
}

TEST(LaunchMessages, SwallowedErrorSaysToReturnIt) {
    const std::string m = describe_swallowed_error("cudaErrorInvalidConfiguration", "invalid configuration", true);
    EXPECT_TRUE(has(m, "returned cudaSuccess")) << m;
    EXPECT_TRUE(has(m, "rows = 0")) << m;
}

// Item 3: a launch config whose stream was never set is a stream bug, and says which field.
TEST(LaunchMessages, UnsetConfigStreamNamesTheField) {
    LaunchShape l = launch(132, 1, 256);
    l.from_config = true;
    const std::string m = describe_wrong_stream(l, "the legacy default stream (stream 0)");
    EXPECT_TRUE(has(m, "legacy default stream")) << m;
    EXPECT_TRUE(has(m, "cudaLaunchConfig_t::stream = stream")) << m;
    EXPECT_FALSE(has(m, "producer")) << m;
    l.from_config = false;
    EXPECT_TRUE(has(describe_wrong_stream(l, "another stream (0x1)"), "<<<grid, block, shared_bytes, stream>>>"));
}

// Item 5: identical failures are one group; the line that stands for the rest counts them.
TEST(FailureGroups, IdenticalFailuresAreOneLine) {
    std::vector<CaseResult> cases;
    const std::string stub = "the entry point returned cudaErrorNotYetImplemented (operation not yet implemented)";
    for (int i = 0; i < 65; ++i) cases.push_back(failed("case_" + std::to_string(i), stub));
    const auto groups = group_failures(cases);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].cases.size(), 65u);
    const std::string line = repeated_failure_line(groups[0]);
    EXPECT_TRUE(has(line, "and 64 more cases with the same failure as case_0")) << line;
    EXPECT_TRUE(has(line, "case_1, case_2, case_3, case_4, ...")) << line;
    EXPECT_EQ(repeated_failure_line(FailureGroup{"x", {"only"}}), "");
}

TEST(FailureGroups, DifferentFailuresStayApartAndPassesAreLeftOut) {
    std::vector<CaseResult> cases = {failed("a", "one"), passed("b"), failed("c", "two"), failed("d", "one")};
    const auto groups = group_failures(cases);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].message, "one");
    EXPECT_EQ(groups[0].cases, (std::vector<std::string>{"a", "d"}));
    EXPECT_TRUE(has(repeated_failure_line(groups[0]), "and 1 more case with the same failure as a: d"));
    EXPECT_EQ(groups[1].cases, (std::vector<std::string>{"c"}));
}

TEST(FailureGroups, ALaunchRefusedInEveryCaseIsOneFailureWhateverItsGrid) {
    // The grid follows each case's rows; the mistake (2048 threads per block) is the same.
    std::vector<CaseResult> cases = {
        failed("one_row", "a kernel launch (grid (1, 1, 1), block (2048, 1, 1)) was refused: 2048 threads is past"),
        failed("prime_cols", "a kernel launch (grid (9, 1, 1), block (2048, 1, 1)) was refused: 2048 threads is past")};
    auto groups = group_failures(cases);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].message, cases[0].message);  // printed as the first case had it
    for (CaseResult& c : cases) c.cause = "output";   // wrong values at different places stay apart
    EXPECT_EQ(group_failures(cases).size(), 2u);
}

TEST(StubNotice, SaysPlainlyWhenTheFileIsStillTheStub) {
    std::vector<CaseResult> bare;
    for (int i = 0; i < 5; ++i)
        bare.push_back(failed("c" + std::to_string(i), "the entry point returned cudaErrorNotYetImplemented (x)"));
    EXPECT_TRUE(has(stub_notice(bare, false), "still the stub:")) << stub_notice(bare, false);

    std::vector<CaseResult> shipped = {passed("rows_zero"), failed("one_row", "no element of y was written")};
    EXPECT_EQ(stub_notice(shipped, false), "");  // not provably the stub from the failures alone
    EXPECT_TRUE(has(stub_notice(shipped, true), "still the stub: this file is the stub as it was handed out, unchanged"));

    std::vector<CaseResult> mixed = bare;
    mixed.push_back(failed("other", "y[row 0, col 1]: expected 1, got 2"));
    EXPECT_EQ(stub_notice(mixed, false), "");
    EXPECT_EQ(stub_notice({passed("a")}, true), "");  // nothing failed: nothing to say
}

TEST(StubNotice, AnOutputNeverWrittenReadsTheSameInEveryCase) {
    CompareResult a, b;
    a.bad = a.unwritten = a.total = 4096;
    b.bad = b.unwritten = b.total = 19;
    a.first_unwritten = b.first_unwritten = true;
    a.expected = 0.5, b.expected = -1.25;
    EXPECT_EQ(describe_failure(a, "y"), describe_failure(b, "y"));
    EXPECT_TRUE(has(describe_failure(a, "y"), "no element of y was written"));
    b.unwritten = 18;  // partly written: the first wrong element is named
    EXPECT_TRUE(has(describe_failure(b, "y"), "y[row"));
}

// Issue 30: a NaN the kernel wrote is a NaN, not an element nobody wrote.
TEST(CompareMessages, AWrittenNaNIsNotCalledUnwritten) {
    CompareResult r;
    r.total = 16384;
    r.bad = 15872;
    r.nan = 6656;
    r.first_row = 1, r.first_col = 0;
    r.expected = 0.5;
    r.got = std::nan("");
    const std::string m = describe_failure(r, "y");
    EXPECT_TRUE(has(m, "y[row 1, col 0]: expected 0.5, got NaN, which the kernel wrote (tolerance")) << m;
    EXPECT_TRUE(has(m, "15872 of the elements are wrong, 0 of them never written, 6656 of them NaN written by the "
                       "kernel")) << m;
    EXPECT_FALSE(has(m, "was never written")) << m;
    r.nan = 0;
    r.got = 0.25;  // no NaN among them: nothing said about NaN
    EXPECT_FALSE(has(describe_failure(r, "y"), "NaN")) << describe_failure(r, "y");
}

TEST(PoisonBits, EachPoisonIsANaNThatNoArithmeticYields) {
    // The NaNs a kernel can write: a GPU's canonical ones, a CPU's default one, the inputs' NaN,
    // each with either sign. None of them may read as the poison.
    for (uint32_t written : {0x7fffffffu, 0xffffffffu, 0xffc00000u, 0x7fc00000u}) {
        float f;
        std::memcpy(&f, &written, 4);
        EXPECT_FALSE(is_poison(f)) << std::hex << written;
    }
    float p;
    std::memcpy(&p, &Poison<float>::bits, 4);
    EXPECT_TRUE(std::isnan(p));
    EXPECT_TRUE(is_poison(p));
    volatile float one = 1.0f;  // computed at run time: arithmetic on the poison quiets it
    EXPECT_FALSE(is_poison(static_cast<float>(p * one)));
    EXPECT_FALSE(is_poison(static_cast<float>(p + one)));
    for (uint16_t written : {0x7fffu, 0xffffu, 0x7e00u, 0xfe00u}) {
        __half h;
        __nv_bfloat16 b;
        std::memcpy(&h, &written, 2);
        std::memcpy(&b, &written, 2);
        EXPECT_FALSE(is_poison(h)) << std::hex << written;
        EXPECT_FALSE(is_poison(b)) << std::hex << written;
    }
    __half h;
    __nv_bfloat16 b;
    std::memcpy(&h, &Poison<__half>::bits, 2);
    std::memcpy(&b, &Poison<__nv_bfloat16>::bits, 2);
    EXPECT_TRUE(std::isnan(__half2float(h)));
    EXPECT_TRUE(std::isnan(__bfloat162float(b)));
    EXPECT_TRUE(is_poison(h) && is_poison(b));
    EXPECT_TRUE(e4m3_is_nan(Poison<E4m3>::bits));
}

// Issue 30: a write into a guard zone names the element, its side, what was there and what is now.
TEST(GuardMessages, AWriteAfterTheOutputNamesTheFirstIndex) {
    GuardWrite g;
    g.changed = 3;
    g.index = 4096;
    g.span = 4096;
    g.expected = "the guard value -12345.6777";
    g.got = "0.5";
    const std::string m = describe_guard_write(g, "y");
    EXPECT_EQ(m, "wrote outside y: 3 guard element(s) after its last element changed, the first at index 4096 (1 past "
                 "its last element, index 4095): expected the guard value -12345.6777, got 0.5");
}

TEST(GuardMessages, AWriteBeforeTheOutputNamesTheNearestIndex) {
    GuardWrite g;
    g.before = true;
    g.changed = 1;
    g.index = -2;
    g.span = 100;
    g.expected = "the guard marker 0xa5a5 (-0.0220)";
    g.got = "0x3c00 (1)";
    const std::string m = describe_guard_write(g, "residual_out");
    EXPECT_EQ(m, "wrote outside residual_out: 1 guard element(s) before its first element changed, the nearest to it "
                 "at index -2 (2 before residual_out[0]): expected the guard marker 0xa5a5 (-0.0220), got 0x3c00 (1)");
}

// Item 2: the gate's reason names the failing shape and its ratio, not the last line of the table.
TEST(GateReason, NamesTheFailingShapeNotTheLastNote) {
    RunReport r;
    r.gate_fraction = 0.8;
    BenchResult slow;
    slow.shape = "chain_16x4096";
    slow.dtype = "bf16";
    slow.ratio = 0.74;
    slow.student_gbps = 100;
    slow.reference_gbps = 135;
    slow.verdict = "slow";
    BenchResult fine = slow;
    fine.shape = "chain_1x4096";
    fine.ratio = 0.97;
    fine.verdict = "pass";
    r.bench = {slow, fine};
    r.gate_notes = {"reference chain_1x4096 f16 chain: 3.09 us per layer with PDL, 3.61 without (+14.5%)"};
    const std::string reason = gate_failure_reason(r);
    EXPECT_TRUE(has(reason, "chain_16x4096 bf16 runs at 0.74")) << reason;
    EXPECT_TRUE(has(reason, "the gate asks for 0.80")) << reason;
    EXPECT_FALSE(has(reason, "chain_1x4096")) << reason;
}

TEST(GateReason, TheWorstShapeAndTheCountOfOthers) {
    RunReport r;
    r.gate_fraction = 0.8;
    for (double ratio : {0.7, 0.5, 0.75}) {
        BenchResult b;
        b.shape = "s" + std::to_string(static_cast<int>(ratio * 100));
        b.dtype = "f16";
        b.ratio = ratio;
        b.verdict = "slow";
        r.bench.push_back(b);
    }
    const std::string reason = gate_failure_reason(r);
    EXPECT_TRUE(has(reason, "s50 f16 runs at 0.50")) << reason;
    EXPECT_TRUE(has(reason, "2 more shapes are below it too")) << reason;
}

TEST(GateReason, PdlSpeedUpAndWrongOutputs) {
    RunReport r;
    r.gate_fraction = 0.8;
    r.extra_gate_problem = "your chain is not measurably faster with use_pdl = true (chain_16x4096)";
    EXPECT_EQ(gate_failure_reason(r), r.extra_gate_problem);
    BenchResult wrong;
    wrong.shape = "16384x4096";
    wrong.dtype = "f16";
    wrong.verdict = "wrong";
    wrong.problem = "the outputs of the timed launches are wrong: y[row 9000, col 0] ...";
    r.bench = {wrong};
    EXPECT_TRUE(has(gate_failure_reason(r), "16384x4096 f16: the outputs of the timed launches are wrong"));
    EXPECT_EQ(gate_failure_reason(RunReport{}), "");
}
