/// @file shared_memory.cpp
/// @brief A block's shared memory: static __shared__ slots and the dynamic arena, poisoned with NaN,
///        and the report of a read of a part of it no thread had written.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/control.h"
#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"
#include "unwritten_reads.h"

namespace emu {

namespace {
constexpr uint32_t kSharedPoison = 0x7fffffffu;  // NaN as fp32, like the grader's scribble on the GPU

/// What the source says about one static __shared__ declaration, for reports.
struct SlotName {
    const char* name = nullptr;
    std::size_t bytes = 0, element = 0;
    int dims = 0;
};
std::mutex g_names_mu;
std::unordered_map<const void*, SlotName> g_names;  ///< declaration key -> its name

/// The dynamic shared memory's declared name on this worker, and the launch it was declared in.
struct DynamicName {
    const LaunchState* launch = nullptr;
    const char* name = nullptr;
    std::size_t element = 0;
};
thread_local EMU_FAST_TLS DynamicName tls_dynamic_name;

/// The first read of never-written shared memory since the grader last took it.
std::mutex g_note_mu;
std::string g_note;
std::atomic<bool> g_noted{false};

/// "partials[3]", "tile (element 40, counting row by row)", "temp (byte 12)": byte `byte` of a
/// declaration named `name` whose elements are `element` bytes, with `dims` array dimensions.
std::string element_text(const char* name, std::size_t byte, std::size_t element, int dims) {
    const std::string n = name;
    if (element == 0) return n + " (byte " + std::to_string(byte) + ")";
    const std::size_t index = byte / element;
    if (dims == 1) return n + "[" + std::to_string(index) + "]";
    if (dims > 1) return n + " (element " + std::to_string(index) + ", counting row by row)";
    return element > 4 ? n + " (byte " + std::to_string(byte) + ")" : n;
}

/// What the source calls byte `offset` of the unit's arena.
std::string shared_object_text(const UnitState& u, uintptr_t offset) {
    LaunchState& l = *u.launch;
    const std::size_t local = offset % u.arena_stride;
    if (local < l.dynamic_bytes) {
        const DynamicName& d = tls_dynamic_name;
        if (d.launch == &l && d.name) return element_text(d.name, local, d.element, 1);
        return "byte " + std::to_string(local) + " of the dynamic shared memory (extern __shared__)";
    }
    std::lock_guard<std::mutex> lock(l.mu);
    std::lock_guard<std::mutex> names(g_names_mu);
    for (const auto& [key, start] : l.slots) {
        auto it = g_names.find(key);
        if (it == g_names.end() || local < start || local >= start + it->second.bytes) continue;
        return element_text(it->second.name, local - start, it->second.element, it->second.dims);
    }
    return "byte " + std::to_string(local - l.static_start) + " of the static __shared__ memory";
}

/// The guard between a block's dynamic and static shared memory: wider than any overrun of a
/// row-sized staging array the lessons use, so that one lands in it rather than in a static slot.
constexpr std::size_t kSharedGuard = std::size_t(16) << 10;

}  // namespace

std::size_t static_shared_start(std::size_t dynamic_bytes) { return (dynamic_bytes + 127) / 128 * 128 + kSharedGuard; }

void check_shared_bounds(const UnitState& u, uintptr_t offset, std::size_t bytes, bool write, const void* pc) {
    LaunchState& l = *u.launch;
    const std::size_t local = offset % u.arena_stride;
    const bool in_guard = local + bytes > l.dynamic_bytes && local < l.static_start;
    if (!in_guard && local + bytes <= l.static_end) return;
    std::size_t static_end;
    {
        std::lock_guard<std::mutex> lock(l.mu);  // a slot declared by another thread just now
        static_end = l.static_end;
    }
    if (!in_guard && local + bytes <= static_end) return;
    const std::string what =
        in_guard ? "byte " + std::to_string(local - l.dynamic_bytes) + " past the end of the dynamic shared memory (" +
                       std::to_string(l.dynamic_bytes) + " bytes, the launch's third <<<>>> argument)"
                 : "byte " + std::to_string(local + bytes - static_end) + " past the end of the static __shared__ memory";
    raise_fault(cudaErrorIllegalAddress,
                "illegal address: " + where_now() + (write ? " writes " : " reads ") + std::to_string(bytes) +
                    " bytes at " + what + at_line(pc) +
                    ": a block's shared memory ends with its dynamic part, so on a GPU this access is out of range "
                    "and the kernel stops with an illegal-address error");
}

thread_local EMU_FAST_TLS std::vector<unsigned char> tls_arena;

void fill_poison(unsigned char* p, std::size_t bytes) {
    for (std::size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(p + i, &kSharedPoison, 4);
    for (std::size_t i = bytes & ~std::size_t(3); i < bytes; ++i) p[i] = 0xff;
    // Poisoned is unwritten: the shadow forgets what earlier blocks on this worker wrote there.
    const std::size_t offset = static_cast<std::size_t>(p - tls_arena.data());
    if (bytes == 0 || offset + bytes > tls_shadow.size() * 4) return;
    for (std::size_t w = offset / 4; w <= (offset + bytes - 1) / 4; ++w)
        tls_shadow[w].written &= static_cast<uint8_t>(~byte_mask(w, offset, bytes));
}

void note_unwritten_read(const UnitState& u, uintptr_t offset, const void* pc) {
    if (g_noted.load(std::memory_order_relaxed)) return;  // one report until the grader takes it
    const ThreadState& t = *tls_thread;
    const std::string text = "read of shared memory never written: " + shared_object_text(u, offset) + at_line(pc) +
                             " by block " + dim_text(u.blocks[t.rank].idx) + " warp " + std::to_string(t.warp) +
                             " lane " + std::to_string(t.lane) + " (thread " + dim_text(t.idx) +
                             "): no thread of the block wrote it before this read, so on a GPU it holds whatever "
                             "was there before";
    std::lock_guard<std::mutex> lock(g_note_mu);
    if (g_noted.load(std::memory_order_relaxed)) return;
    g_note = text;
    g_noted.store(true, std::memory_order_relaxed);
}

std::string take_unwritten_shared_read() {
    std::lock_guard<std::mutex> lock(g_note_mu);
    std::string note = std::move(g_note);
    g_note.clear();
    g_noted.store(false, std::memory_order_relaxed);
    return note;
}

void* shared_slot(const void* key, std::size_t bytes, std::size_t align, const char* name, std::size_t element,
                  int dims) {
    UnitState* u = tls_unit;
    if (!u) raise_fault(cudaErrorLaunchFailure, "__shared__ memory used outside a kernel");
    BlockState& b = u->blocks[tls_thread->rank];
    LaunchState& l = *u->launch;
    std::size_t offset = 0;
    bool found = false;
    for (const auto& [k, off] : u->slot_cache)
        if (k == key) {
            offset = off;
            found = true;
            break;
        }
    if (!found) {
        std::lock_guard<std::mutex> lock(l.mu);
        auto it = l.slots.find(key);
        if (it == l.slots.end()) {
            std::size_t start = (l.static_end + align - 1) / align * align;
            it = l.slots.emplace(key, start).first;
            l.static_end = start + bytes;
        }
        offset = it->second;
        u->slot_cache.emplace_back(key, offset);
        if (name) {
            std::lock_guard<std::mutex> names(g_names_mu);
            g_names.insert_or_assign(key, SlotName{name, bytes, element, dims});
        }
    }
    const std::size_t end = offset + bytes;
    const std::size_t total = end - l.static_start;  // static bytes so far
    if (total > DeviceLimits::static_smem)
        raise_fault(cudaErrorLaunchOutOfResources,
                    "too much static __shared__ memory: " + std::to_string(total) +
                        " bytes, more than the 48 KB a kernel may declare statically (use dynamic shared memory "
                        "and cudaFuncSetAttribute for more)");
    if (total + l.dynamic_bytes > DeviceLimits::optin_smem)
        raise_fault(cudaErrorLaunchOutOfResources, "too much shared memory for one block");
    // A slot first seen in this block is poisoned now; known ones were poisoned at block start.
    if (end > b.poisoned) {
        fill_poison(b.arena + b.poisoned, end - b.poisoned);
        b.poisoned = end;
    }
    return b.arena + offset;
}

void* dynamic_shared(const char* name, std::size_t element) {
    UnitState* u = tls_unit;
    if (!u) return tls_arena.data();  // a plain-mode launch of the grader's own kernels
    if (name) tls_dynamic_name = DynamicName{u->launch, name, element};
    return u->blocks[tls_thread->rank].arena;
}

}  // namespace emu
