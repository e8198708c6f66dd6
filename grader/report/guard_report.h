/// @file guard_report.h
/// @brief How a write into a guard zone is reported, on the CPU (lesson 1) and the GPU alike.
#pragma once

#include <cstdint>
#include <string>

namespace workbook {

/// The elements of one guard zone that a call changed.
struct GuardWrite {
    bool before = false;   ///< the zone before the tensor's first element (otherwise after its last)
    uint64_t changed = 0;  ///< elements of the zone that changed
    /// The changed element nearest the tensor, as an index counted from the tensor's first element:
    /// negative before it, `span` or more after it.
    int64_t index = 0;
    int64_t span = 0;      ///< elements from the tensor's first to its last, both included
    std::string expected;  ///< what that element held before the call (the guard's value or marker)
    std::string got;       ///< what it holds now
};

/// "wrote outside y: 2 guard element(s) after its last element changed, the first at index 4096 (1
/// past its last element, index 4095): expected ..., got ..." — the same words in every lesson.
std::string describe_guard_write(const GuardWrite& g, const char* tensor_name);

}  // namespace workbook
