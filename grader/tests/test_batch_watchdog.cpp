/// @file test_batch_watchdog.cpp
/// @brief The remote timing's batch watchdog: a phase that outlives its seconds is named, rescued
///        once, and ends the run when the rescue does not help; a phase that ends is left alone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "remote/batch_watchdog.h"

namespace {

using workbook::remote::BatchWatchdog;

/// What the watchdog's stop was called with; waits (up to a minute, not a timing) for the call.
struct Stops {
    std::mutex m;
    std::condition_variable cv;
    std::string message;
    int calls = 0;
    std::function<void(const std::string&)> fn() {
        return [this](const std::string& text) {
            std::lock_guard<std::mutex> lock(m);
            message = text;
            ++calls;
            cv.notify_all();
        };
    }
    bool wait() {
        std::unique_lock<std::mutex> lock(m);
        return cv.wait_for(lock, std::chrono::seconds(60), [&] { return calls > 0; });
    }
};

TEST(BatchWatchdog, APhaseThatEndsIsLeftAlone) {
    Stops stops;
    std::atomic<int> rescued{0};
    {
        BatchWatchdog dog(stops.fn());
        dog.begin("quick", 30, [&] { ++rescued; });
        dog.end();
        EXPECT_EQ(dog.expired(), "");
    }
    EXPECT_EQ(stops.calls, 0);
    EXPECT_EQ(rescued.load(), 0);
}

TEST(BatchWatchdog, APhaseWithoutRescueThatOutlivesItsSecondsStopsTheRunNamingIt) {
    Stops stops;
    BatchWatchdog dog(stops.fn());
    dog.begin("waiting for the grader's stream", 0.05);
    ASSERT_TRUE(stops.wait());
    EXPECT_NE(stops.message.find("remote timing: batch did not finish in 0.05 s (phase: waiting for the grader's stream)"),
              std::string::npos)
        << stops.message;
    EXPECT_NE(dog.expired().find("did not finish"), std::string::npos);
    dog.end();
}

TEST(BatchWatchdog, ARescueThatEndsThePhaseAvoidsTheStop) {
    Stops stops;
    std::atomic<bool> rescued{false};
    std::string expired;
    {
        BatchWatchdog dog(stops.fn());
        // The rescue releases the wait, so the phase's caller gets out and ends the phase.
        dog.begin("queuing under the hold", 0.05, [&] {
            dog.end();
            rescued = true;
        });
        for (int i = 0; i < 60000 && !rescued; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ASSERT_TRUE(rescued.load());
        expired = dog.expired();
    }
    EXPECT_EQ(stops.calls, 0);
    EXPECT_NE(expired.find("(phase: queuing under the hold)"), std::string::npos) << expired;
}

TEST(BatchWatchdog, ARescueThatDoesNotHelpStillStopsTheRun) {
    Stops stops;
    std::atomic<bool> rescued{false};
    BatchWatchdog dog(stops.fn());
    dog.begin("queuing under the hold", 0.05, [&] { rescued = true; });
    ASSERT_TRUE(stops.wait());
    EXPECT_TRUE(rescued.load());
    EXPECT_NE(stops.message.find("after the rescue"), std::string::npos) << stops.message;
    dog.end();
}

TEST(BatchWatchdog, ANewPhaseRestartsTheClock) {
    Stops stops;
    {
        BatchWatchdog dog(stops.fn());
        dog.begin("first", 0.2);
        dog.begin("second", 30);  // the first's deadline no longer applies
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        dog.end();
    }
    EXPECT_EQ(stops.calls, 0) << stops.message;
}

}  // namespace
