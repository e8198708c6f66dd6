/// @file ubsan_records.h
/// @brief The records UndefinedBehaviorSanitizer passes to its handlers, as far as the emulator
///        reads them: where the check is in the source, and the type it checks. Shared by the
///        bounds check (array_bounds.cpp) and the alignment check (memory.cpp).
#pragma once
#include <cstdint>

namespace emu::ubsan {

/// The source position of the checked expression.
struct Location {
    const char* file;
    uint32_t line, column;
};

/// A type as the compiler describes it; the name runs on past the struct.
struct Type {
    uint16_t kind, info;  ///< for an integer: info = log2(bit width) << 1 | signed
    char name[1];
};

}  // namespace emu::ubsan
