/// @file batch_watchdog.h
/// @brief Bounds each phase of a remote timed batch, so a wait that never ends costs seconds and
///        names the phase, not the caller's whole time limit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace workbook::remote {

/// One phase at a time is watched. When a phase outlives its seconds, the watchdog's thread says so
/// ("remote timing: batch did not finish in S s (phase: P)") and runs the phase's rescue, once
/// (the grader's own hold released, so its stream and a CUDA call blocked on it can go on); a phase
/// without a rescue, or one still not ended `S` seconds after its rescue, ends the process with that
/// message (a CUDA call the grader's thread is blocked in cannot be interrupted otherwise).
class BatchWatchdog {
public:
    /// `stop` ends the process after a hang; tests pass their own.
    explicit BatchWatchdog(std::function<void(const std::string&)> stop = {});
    ~BatchWatchdog();
    BatchWatchdog(const BatchWatchdog&) = delete;
    BatchWatchdog& operator=(const BatchWatchdog&) = delete;

    /// Starts watching `phase` (ending the phase before it); `rescue` may be empty. The rescue runs on
    /// a thread of its own, perhaps after the phase's caller returned: it must own what it uses.
    void begin(const std::string& phase, double seconds, std::function<void()> rescue = {});
    /// The phase ended.
    void end();
    /// The message of the latest phase that outlived its seconds ("" if none did since `begin`).
    std::string expired() const;

private:
    void watch();

    std::function<void(const std::string&)> stop_;
    mutable std::mutex m_;
    std::condition_variable cv_;
    bool quit_ = false, active_ = false;
    uint64_t generation_ = 0;  ///< counts begin(): a phase that ended is not confused with the next
    std::string phase_, expired_;
    double seconds_ = 0;
    std::chrono::steady_clock::duration span_{};
    std::chrono::steady_clock::time_point deadline_;
    std::function<void()> rescue_;
    std::thread thread_;  ///< last: it starts once every member it reads is made
};

/// Ends the process with `message` on stdout and stderr (the default `stop`).
[[noreturn]] void stop_after_hang(const std::string& message);

/// The watchdog of this process's remote timed batches.
BatchWatchdog& batch_watchdog();

}  // namespace workbook::remote
