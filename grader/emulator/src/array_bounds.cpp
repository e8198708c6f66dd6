/// @file array_bounds.cpp
/// @brief An index past the end of an array whose size the compiler knows (a thread's `float f[VEC]`,
///        a pack's `T v[VEC]`): UndefinedBehaviorSanitizer's bounds check (-fsanitize=bounds) calls
///        here (a static __shared__ array too), and inside a kernel the access is a fault that names
///        the array type, the index and the line. On a GPU such an access reads or writes whatever
///        the compiler put next to the array, or nothing at all, so it shows only by luck.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "internal.h"
#include "scheduler_state.h"
#include "ubsan_records.h"

namespace {

using UbsanType = emu::ubsan::Type;
struct UbsanOutOfBounds {
    emu::ubsan::Location location;
    const UbsanType* array;
    const UbsanType* index;
};

/// The index as the source wrote it: signed where its type is.
std::string index_text(const UbsanType* type, uintptr_t value) {
    const unsigned bits = type ? 1u << (type->info >> 1) : 64u;
    const bool is_signed = type && (type->info & 1);
    if (is_signed && bits < 64 && (value >> (bits - 1)) & 1) value |= ~uintptr_t(0) << bits;  // sign-extend
    return is_signed ? std::to_string(static_cast<int64_t>(value)) : std::to_string(static_cast<uint64_t>(value));
}

void out_of_bounds(const UbsanOutOfBounds* d, uintptr_t index) {
    const std::string type = d->array ? std::string(d->array->name) : std::string("array");
    const char* file = d->location.file ? d->location.file : "?";
    const char* slash = std::strrchr(file, '/');
    const std::string where = std::string(slash ? slash + 1 : file) + ":" + std::to_string(d->location.line);
    const std::string text = "index " + index_text(d->index, index) + " is out of bounds of an array of type " + type +
                             " at " + where;
    if (!emu::tls_unit) {  // the submission's host code: not a kernel's access, and not the grader's to judge
        std::fprintf(stderr, "emulator: %s (host code)\n", text.c_str());
        return;
    }
    emu::raise_fault(cudaErrorIllegalAddress,
                     "illegal address: " + emu::where_now() + " uses " + text +
                         ": on a GPU the access lands on whatever lies next to the array (another variable, a "
                         "register, or nothing: the compiler may drop it), so the result is undefined and may pass "
                         "by luck");
}

}  // namespace

extern "C" void __ubsan_handle_out_of_bounds(UbsanOutOfBounds* d, uintptr_t index) { out_of_bounds(d, index); }
extern "C" void __ubsan_handle_out_of_bounds_abort(UbsanOutOfBounds* d, uintptr_t index) { out_of_bounds(d, index); }
