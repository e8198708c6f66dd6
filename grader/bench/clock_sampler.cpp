/// @file clock_sampler.cpp
#include "bench/clock_sampler.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace workbook {
namespace {

// The few NVML entry points used, by their C signatures (nvml.h is not needed to build).
using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using ByBusFn = int (*)(const char*, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned int*);
constexpr int kNvmlSuccess = 0, kClockSm = 1, kClockMem = 2;

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

struct ClockSampler::State {
    void* lib = nullptr;
    ShutdownFn shutdown = nullptr;
    ClockFn clock = nullptr;
    NvmlDevice device = nullptr;
    std::string note;
    std::atomic<bool> counting{false}, stop{false};
    std::thread thread;
    mutable std::mutex lock;
    std::vector<double> sm, mem;

    bool open() {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            note = "NVML (libnvidia-ml.so.1) could not be opened";
            return false;
        }
        auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
        auto by_bus = reinterpret_cast<ByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
        shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
        clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
        if (!init || !by_bus || !shutdown || !clock) {
            note = "this NVML lacks the calls the clock sampler needs";
            return false;
        }
        if (init() != kNvmlSuccess) {
            note = "NVML did not start";
            shutdown = nullptr;
            return false;
        }
        // NVML numbers every GPU of the machine; the device CUDA runs on is found by its PCI address.
        int dev = 0;
        char bus[32] = {};
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess ||
            by_bus(bus, &device) != kNvmlSuccess) {
            cudaGetLastError();
            note = "NVML does not know the GPU this run uses";
            return false;
        }
        return true;
    }

    void run() {
        while (!stop.load()) {
            if (counting.load()) {
                unsigned int s = 0, m = 0;
                if (clock(device, kClockSm, &s) == kNvmlSuccess && clock(device, kClockMem, &m) == kNvmlSuccess) {
                    std::lock_guard<std::mutex> g(lock);
                    sm.push_back(s);
                    mem.push_back(m);
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
};

ClockSampler::ClockSampler() : s_(new State) {
    if (s_->open()) s_->thread = std::thread([this] { s_->run(); });
}

ClockSampler::~ClockSampler() {
    s_->stop = true;
    if (s_->thread.joinable()) s_->thread.join();
    if (s_->shutdown) s_->shutdown();
    if (s_->lib) dlclose(s_->lib);
    delete s_;
}

void ClockSampler::begin() { s_->counting = true; }

void ClockSampler::end() { s_->counting = false; }

ClockReading ClockSampler::reading() const {
    ClockReading r;
    std::lock_guard<std::mutex> g(s_->lock);
    r.samples = static_cast<int>(s_->sm.size());
    if (r.samples == 0) {
        r.note = s_->note.empty() ? "no clock reading fell inside a timed sample" : s_->note;
        return r;
    }
    r.sm_mhz = median_of(s_->sm);
    r.mem_mhz = median_of(s_->mem);
    r.sm_min = *std::min_element(s_->sm.begin(), s_->sm.end());
    r.sm_max = *std::max_element(s_->sm.begin(), s_->sm.end());
    r.mem_min = *std::min_element(s_->mem.begin(), s_->mem.end());
    r.mem_max = *std::max_element(s_->mem.begin(), s_->mem.end());
    return r;
}

}  // namespace workbook
