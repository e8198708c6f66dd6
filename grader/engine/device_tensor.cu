/// @file device_tensor.cu
#include "engine/device_tensor.h"

#include "engine/buffer_hooks.h"
#include "engine/launch_guard.h"
#include "workbook/cuda_check.h"

#ifdef WORKBOOK_CPU_EMULATOR
#include "emu/control.h"
#endif

namespace workbook {

DeviceTensor::DeviceTensor(DType dtype, Layout layout, int64_t misalign, std::size_t guard_bytes)
    : dtype_(dtype), layout_(layout), guard_bytes_(span_bytes() ? guard_bytes : kGuardBytes) {
    // An empty tensor keeps its guard zones: its pointer must still be a real allocation's.
    lead_bytes_ = guard_bytes_ + static_cast<std::size_t>(misalign) * dtype_size(dtype);
    total_bytes_ = lead_bytes_ + span_bytes() + guard_bytes_;
    base_ = static_cast<unsigned char*>(allocate_device(total_bytes_));
#ifdef WORKBOOK_CPU_EMULATOR
    // A kernel that reads a guard zone reads outside its tensor (one vector or column too many):
    // on the emulator that is an illegal address, as a read past a tight input is. The bytes between
    // the guard and the first element (misalign) stay readable, as in a tight input's allocation.
    emu::set_read_window(base_, guard_bytes_, lead_bytes_ + span_bytes());
#endif
}

DeviceTensor::~DeviceTensor() {
    if (!device_hung()) release_device(base_);  // cudaFree waits for the device, which a hung kernel never frees
}

}  // namespace workbook
