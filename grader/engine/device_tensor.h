/// @file device_tensor.h
/// @brief A device buffer laid out as rows, with guard zones before and after it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "workbook/dtype.h"
#include "workbook/inputs.h"

namespace workbook {

/// Bytes of guard zone on each side of every tensor.
inline constexpr std::size_t kGuardBytes = 4096;
/// Byte pattern of guard zones and of the padding between rows; outputs must leave it alone.
inline constexpr unsigned char kMarkerByte = 0xA5;
/// What an output element holds before a launch: engine/poison.h.

/// A tensor whose first element sits `misalign` elements past a 256-byte boundary, with `guard_bytes` of
/// guard zone before and after it (0: the data is the whole allocation but for the misalignment, so that
/// an access before or past it is outside the allocation).
class DeviceTensor {
public:
    DeviceTensor(DType dtype, Layout layout, int64_t misalign = 0, std::size_t guard_bytes = kGuardBytes);
    ~DeviceTensor();
    DeviceTensor(const DeviceTensor&) = delete;
    DeviceTensor& operator=(const DeviceTensor&) = delete;

    void* data() const { return base_ + lead_bytes_; }
    DType dtype() const { return dtype_; }
    const Layout& layout() const { return layout_; }
    std::size_t span_bytes() const { return static_cast<std::size_t>(layout_.span()) * dtype_size(dtype_); }
    unsigned char* base() const { return base_; }
    std::size_t lead_bytes() const { return lead_bytes_; }
    std::size_t total_bytes() const { return total_bytes_; }
    std::size_t guard_bytes() const { return guard_bytes_; }

private:
    DType dtype_;
    Layout layout_;
    unsigned char* base_ = nullptr;
    std::size_t lead_bytes_ = 0;
    std::size_t total_bytes_ = 0;
    std::size_t guard_bytes_ = kGuardBytes;
};

}  // namespace workbook
