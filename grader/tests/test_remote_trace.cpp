/// @file test_remote_trace.cpp
/// @brief The remote timing's trace line (what a GPU run's log is searched for) and the seconds the
///        batch watchdog gives each phase (below the caller's kill when WORKBOOK_REMOTE_PHASE_SECONDS
///        says so).
#include <gtest/gtest.h>

#include <string>

#include "remote/remote_trace.h"

namespace {

using workbook::remote::batch_phase_seconds;
using workbook::remote::remote_trace_line;

TEST(RemoteTrace, LineNamesTimeSideProcessAndPhase) {
    EXPECT_EQ(remote_trace_line(12.5, "grader", 4321, "side=0 'queued' received; hold=3"),
              "remote-trace t=12.500000 side=grader pid=4321 side=0 'queued' received; hold=3");
    EXPECT_EQ(remote_trace_line(0.000001, "host", 7, "group 0 queued: wait go>=1, write done=1"),
              "remote-trace t=0.000001 side=host pid=7 group 0 queued: wait go>=1, write done=1");
}

TEST(RemoteTrace, PhaseSecondsDefaultToTheCallTimeoutPlus30) {
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, nullptr), 60);
    EXPECT_DOUBLE_EQ(batch_phase_seconds(15, ""), 45);
}

TEST(RemoteTrace, PhaseSecondsFromTheEnvironmentWhenPositive) {
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "20"), 20);
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "2.5"), 2.5);
    // Not a positive number: the default, never a watchdog that fires at once.
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "0"), 60);
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "-4"), 60);
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "20s"), 60);
    EXPECT_DOUBLE_EQ(batch_phase_seconds(30, "soon"), 60);
}

}  // namespace
