/// @file device_tensor.cu
#include "device_tensor.h"

#include "workbook/cuda_check.h"

namespace workbook {

DeviceTensor::DeviceTensor(DType dtype, Layout layout, int64_t misalign) : dtype_(dtype), layout_(layout) {
    lead_bytes_ = kGuardBytes + static_cast<std::size_t>(misalign) * dtype_size(dtype);
    total_bytes_ = lead_bytes_ + span_bytes() + kGuardBytes;
    WB_CUDA_CHECK(cudaMalloc(&base_, total_bytes_));
}

DeviceTensor::~DeviceTensor() { cudaFree(base_); }

}  // namespace workbook
