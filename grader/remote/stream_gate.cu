/// @file stream_gate.cu
#include "remote/stream_gate.h"

#include <cuda.h>

#include <stdexcept>
#include <string>

#include "engine/driver_entry.h"
#include "workbook/cuda_check.h"

namespace workbook::remote {

const StreamGate& StreamGate::get() {
    static const StreamGate gate = [] {
        StreamGate g;
        auto find = [&g](const char* name, void*& fn) {
            if (!find_driver_entry(name, fn)) g.why_not_ = std::string("the CUDA driver has no ") + name;
        };
        find("cuStreamWaitValue32", g.wait_);
        find("cuStreamWriteValue32", g.write_);
        if (!g.available()) g.wait_ = nullptr, g.write_ = nullptr;
        return g;
    }();
    return gate;
}

void StreamGate::wait(cudaStream_t stream, void* word, uint32_t value) const {
    if (!wait_) throw std::runtime_error(why_not_);
    const auto fn = reinterpret_cast<decltype(&cuStreamWaitValue32)>(wait_);
    const CUresult r = fn(stream, reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS) throw std::runtime_error("cuStreamWaitValue32 failed with CUresult " + std::to_string(r));
}

void StreamGate::write(cudaStream_t stream, void* word, uint32_t value) const {
    if (!write_) throw std::runtime_error(why_not_);
    const auto fn = reinterpret_cast<decltype(&cuStreamWriteValue32)>(write_);
    const CUresult r = fn(stream, reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS) throw std::runtime_error("cuStreamWriteValue32 failed with CUresult " + std::to_string(r));
}

}  // namespace workbook::remote
