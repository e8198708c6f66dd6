/// @file device_tensor.cu
#include "engine/device_tensor.h"

#include "engine/buffer_hooks.h"
#include "engine/launch_guard.h"
#include "workbook/cuda_check.h"

namespace workbook {

DeviceTensor::DeviceTensor(DType dtype, Layout layout, int64_t misalign) : dtype_(dtype), layout_(layout) {
    lead_bytes_ = kGuardBytes + static_cast<std::size_t>(misalign) * dtype_size(dtype);
    total_bytes_ = lead_bytes_ + span_bytes() + kGuardBytes;
    base_ = static_cast<unsigned char*>(allocate_device(total_bytes_));
}

DeviceTensor::~DeviceTensor() {
    if (!device_hung()) release_device(base_);  // cudaFree waits for the device, which a hung kernel never frees
}

}  // namespace workbook
