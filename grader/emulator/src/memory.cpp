/// @file memory.cpp
/// @brief Device memory and the access checks: every load and store of a submission is
///        instrumented by the compiler (-fsanitize=thread), and these hooks replace the
///        ThreadSanitizer runtime: shared memory goes to the race detector, device memory
///        is checked against the live allocations, and vector accesses for alignment.
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "emu/control.h"
#include "internal.h"
#include "sampling.h"
#include "traffic.h"
#include "scheduler_state.h"
#include "ubsan_records.h"
#include "unwritten_reads.h"

namespace emu {
namespace {

/// The device heap: one reserved range, allocations carved in 64 KiB granules. A freed range
/// is illegal to the checks until an allocation of the same size takes it again, the lowest
/// first: like cudaMalloc, which hands freed memory back, so a grader that allocates a case's
/// tensors again for its next repetition gets the same addresses, as on the GPU (a kernel that
/// keys a cache by address sees the new inputs there). Lowest first makes that exact: the same
/// allocations and frees in the same order get the same addresses. A table maps each granule to
/// its allocation.
constexpr std::size_t kHeapBytes = std::size_t(1) << 40;  // address space only (MAP_NORESERVE)
constexpr int kGranuleShift = 16;
/// The width of a user-space address on x86-64 and AArch64 (without 5-level paging's opt-in): a
/// kernel's access above it is never to memory it may touch.
constexpr int kUserAddressBits = 47;

struct Allocation {
    uintptr_t start = 0;
    std::size_t bytes = 0;
    bool live = false;
    bool lazy = false;  ///< a lazy range of a sampled call (sampling.cpp): every access is seen
    /// Reads must fall in [start + read_lo, start + read_hi) (emu::set_read_window).
    std::size_t read_lo = 0, read_hi = 0;
};

struct Heap {
    uintptr_t lo = 0;
    /// Allocations start a quarter of the way in: a row offset computed in 32 bits that wraps
    /// negative (at most 2^31 vectors of 16 bytes, 32 GiB, before a buffer) still lands inside the
    /// device range, where the checks report it as an illegal address, as the GPU does.
    std::size_t next = kHeapBytes / 4;
    std::vector<Allocation> allocs{Allocation{}};  // index 0: no allocation
    /// Freed ranges by their span in bytes.
    std::map<std::size_t, std::set<uintptr_t>> freed;
    uint32_t* granule_owner = nullptr;
    std::shared_mutex mu;

    Heap() {
        // One read-write mapping, backed lazily: per-allocation protections would cost a kernel
        // mapping each, and a grading run makes tens of thousands of allocations.
        void* p = mmap(nullptr, kHeapBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            std::perror("emulator: cannot reserve the device address range");
            std::abort();
        }
        lo = reinterpret_cast<uintptr_t>(p);
        void* t = mmap(nullptr, (kHeapBytes >> kGranuleShift) * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (t == MAP_FAILED) {
            std::perror("emulator: cannot map the device heap's table");
            std::abort();
        }
        granule_owner = static_cast<uint32_t*>(t);
    }
    bool contains(uintptr_t a) const { return a - lo < kHeapBytes; }
};

Heap* const g_heap = new Heap;  // never destroyed: kernels may still run while the process exits
inline Heap& heap() { return *g_heap; }
/// The device range's start, read on every access: most accesses outside it are a fiber's stack.
const uintptr_t g_heap_lo = g_heap->lo;

/// Advances at every cudaFree, so a worker's cached allocation (below) is never trusted after one.
std::atomic<uint64_t> g_free_generation{1};

/// The live allocations a worker's latest device accesses fell in (a kernel reads and writes a
/// few tensors over and over), replaced in turn.
struct CachedRanges {
    static constexpr int kSize = 4;
    uintptr_t start[kSize] = {}, end[kSize] = {};
    uint64_t generation = 0;
    int next = 0;
};
thread_local __attribute__((tls_model("initial-exec"))) CachedRanges tls_ranges;

std::string hex_address(uintptr_t a) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIxPTR, a);
    return b;
}

}  // namespace

void* device_alloc(std::size_t bytes) {
    Heap& h = heap();
    std::unique_lock<std::shared_mutex> lock(h.mu);
    const std::size_t granule = std::size_t(1) << kGranuleShift;
    const std::size_t span = (bytes + granule - 1) / granule * granule;
    uintptr_t start;
    auto again = h.freed.find(span);
    if (again != h.freed.end() && !again->second.empty()) {
        start = *again->second.begin();
        again->second.erase(again->second.begin());
    } else {
        // One empty granule between allocations: running off the end lands in no allocation.
        if (h.next + span + granule > kHeapBytes) return nullptr;
        start = h.lo + h.next;
        h.next += span + granule;
    }
    const uint32_t id = static_cast<uint32_t>(h.allocs.size());
    h.allocs.push_back(Allocation{start, bytes, true, false, 0, bytes});
    for (std::size_t g = 0; g < span / granule; ++g) h.granule_owner[((start - h.lo) >> kGranuleShift) + g] = id;
    return reinterpret_cast<void*>(start);
}

bool device_free(void* p) {
    Heap& h = heap();
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::unique_lock<std::shared_mutex> lock(h.mu);
    if (!h.contains(a)) return false;
    const uint32_t id = h.granule_owner[(a - h.lo) >> kGranuleShift];
    if (id == 0 || h.allocs[id].start != a || !h.allocs[id].live) return false;
    Allocation& al = h.allocs[id];
    if (al.lazy) forget_lazy_range(al.start);
    al.live = false;
    al.lazy = false;
    g_free_generation.fetch_add(1, std::memory_order_relaxed);
    const std::size_t granule = std::size_t(1) << kGranuleShift;
    const std::size_t span = (al.bytes + granule - 1) / granule * granule;
    if (span) {
        madvise(p, span, MADV_DONTNEED);  // the memory goes back; the addresses are illegal until reused
        h.freed[span].insert(a);
    }
    return true;
}

namespace {

/// The live or freed allocation that starts at `start`, or nullptr; the caller holds the heap's lock.
Allocation* allocation_starting_at(Heap& h, const void* start) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(start);
    if (!h.contains(a)) return nullptr;
    const uint32_t id = h.granule_owner[(a - h.lo) >> kGranuleShift];
    return id == 0 || h.allocs[id].start != a ? nullptr : &h.allocs[id];
}

}  // namespace

void set_allocation_lazy(const void* start, bool lazy) {
    Heap& h = heap();
    std::unique_lock<std::shared_mutex> lock(h.mu);
    Allocation* al = allocation_starting_at(h, start);
    if (!al) return;
    al->lazy = lazy;
    g_free_generation.fetch_add(1, std::memory_order_relaxed);  // no worker keeps it among its cached ranges
}

void set_read_window(const void* allocation, std::size_t lo, std::size_t hi) {
    Heap& h = heap();
    std::unique_lock<std::shared_mutex> lock(h.mu);
    Allocation* al = allocation_starting_at(h, allocation);
    if (!al) return;
    al->read_lo = lo < al->bytes ? lo : al->bytes;
    al->read_hi = hi < al->read_lo ? al->read_lo : hi < al->bytes ? hi : al->bytes;
    g_free_generation.fetch_add(1, std::memory_order_relaxed);  // no worker keeps the whole allocation cached
}

bool device_range_ok(const void* p, std::size_t bytes) {
    Heap& h = heap();
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (!h.contains(a)) return true;
    const uint32_t id = h.granule_owner[(a - h.lo) >> kGranuleShift];
    if (id == 0) return false;
    std::shared_lock<std::shared_mutex> lock(h.mu);
    const Allocation& al = h.allocs[id];
    return al.live && a >= al.start && a + bytes <= al.start + al.bytes;
}

[[gnu::noinline, gnu::cold]] void report_illegal_address(uintptr_t a, std::size_t bytes, bool write, const void* pc) {
    Heap& h = heap();
    std::ostringstream o;
    o << "illegal address: " << where_now() << " " << (write ? "writes" : "reads");
    if (bytes) o << " " << bytes << " byte(s)";
    o << " at " << hex_address(a);
    const uint32_t id = h.contains(a) ? h.granule_owner[(a - h.lo) >> kGranuleShift] : 0;
    if (id != 0 && !h.allocs[id].live) {
        o << ", inside a device buffer that was already freed";
    } else if (!h.contains(a)) {
        // Far from every buffer (an index that wrapped in 32 bits and was then sign-extended, a
        // garbage pointer): the nearest buffer below or above tells how far the offset went.
        const Allocation* below = nullptr;
        const Allocation* above = nullptr;
        for (const Allocation& al : h.allocs) {
            if (!al.live || al.start == 0) continue;
            if (al.start <= a && (!below || al.start > below->start)) below = &al;
            if (al.start > a && (!above || al.start < above->start)) above = &al;
        }
        o << ", not inside any allocation";
        if (a >> kUserAddressBits)
            o << " (past the 47-bit user address space)";
        else if (a < (uintptr_t(1) << kGranuleShift))
            o << " (a null pointer, or an offset from one)";
        else if (below)
            o << " (" << a - (below->start + below->bytes) << " byte(s) past the end of the " << below->bytes
              << "-byte device buffer at " << hex_address(below->start) << ")";
        else if (above)
            o << " (" << above->start - a << " byte(s) before the " << above->bytes << "-byte device buffer at "
              << hex_address(above->start) << ")";
    } else {
        // Name the nearest allocation below the address, so the offset points at the bug.
        const Allocation* near = nullptr;
        for (const Allocation& al : h.allocs)
            if (al.live && al.start <= a && (!near || al.start > near->start)) near = &al;
        if (near && a >= near->start + near->bytes)
            o << ", " << a - (near->start + near->bytes) << " byte(s) past the end of the " << near->bytes
              << "-byte device buffer at " << hex_address(near->start);
        else
            o << ", outside every device buffer";
    }
    const std::string line = source_line(pc);
    if (!line.empty()) o << ", at " << line;
    raise_fault(cudaErrorIllegalAddress, o.str());
}

void check_typed_alignment(const void* addr, std::size_t alignment, const char* type, int kind, const void* pc) {
    if (!tls_unit) return;  // host code of the submission, or the grader's own plain kernels
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (a == 0 || alignment <= 1 || a % alignment == 0) return;
    std::ostringstream o;
    o << "misaligned address: " << where_now() << " " << (kind == 0 ? "loads" : kind == 1 ? "stores" : "copies")
      << " a whole " << type << " at "
      << hex_address(a) << ", which is not a multiple of " << alignment << " (the type is " << alignment
      << "-byte aligned, so the GPU moves it with " << alignment << "-byte accesses: a " << alignment
      << "-byte vector access needs a " << alignment << "-byte aligned address)";
    const std::string line = source_line(pc);
    if (!line.empty()) o << ", at " << line;
    raise_fault(cudaErrorMisalignedAddress, o.str());
}

void bulk_prefetch_l2(const void* addr, long long bytes) {
    if (!tls_unit) return;  // host code of the submission, or the grader's own plain kernels
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    const char* what = nullptr;
    cudaError_t code = cudaErrorMisalignedAddress;
    if (a % 16 != 0) {
        what = "its address is not a multiple of 16 (a bulk copy or prefetch needs 16-byte alignment)";
    } else if (bytes <= 0 || bytes % 16 != 0) {
        what = "its size is not a positive multiple of 16 bytes";
        code = cudaErrorInvalidValue;
    } else if (!device_range_ok(addr, static_cast<std::size_t>(bytes))) {
        what = "the range is not inside one device buffer";
        code = cudaErrorIllegalAddress;
    }
    if (!what) return;
    std::ostringstream o;
    o << (code == cudaErrorIllegalAddress ? "illegal address: " : code == cudaErrorMisalignedAddress ? "misaligned address: " : "invalid bulk prefetch: ")
      << where_now() << " asks for a bulk L2 prefetch of " << bytes << " byte(s) at " << hex_address(a) << ": " << what;
    const std::string line = source_line(__builtin_extract_return_addr(__builtin_return_address(0)));
    if (!line.empty()) o << ", at " << line;
    raise_fault(code, o.str());
}

namespace {

[[noreturn, gnu::noinline, gnu::cold]] void report_misaligned(uintptr_t a, std::size_t bytes, bool write,
                                                              const void* pc) {
    std::ostringstream o;
    o << "misaligned address: " << where_now() << " " << (write ? "writes" : "reads") << " " << bytes
      << " bytes at " << hex_address(a) << ", which is not a multiple of " << bytes;
    if (bytes == 16) o << " (a 16-byte vector access needs a 16-byte aligned address)";
    const std::string line = source_line(pc);
    if (!line.empty()) o << ", at " << line;
    raise_fault(cudaErrorMisalignedAddress, o.str());
}

/// A read of an allocation outside its read window (emu::set_read_window): the grader's guard
/// zone before or after a tensor.
[[noreturn, gnu::noinline, gnu::cold]] void report_guard_read(const Allocation& al, uintptr_t a, std::size_t bytes,
                                                              const void* pc) {
    const uintptr_t lo = al.start + al.read_lo, hi = al.start + al.read_hi;
    std::ostringstream o;
    o << "illegal address: " << where_now() << " reads " << bytes << " byte(s) at " << hex_address(a) << ", ";
    // A read that starts inside the tensor and runs out of it (a whole vector at its end) says how far it runs.
    if (a + bytes > hi && a < hi)
        o << "its last " << a + bytes - hi << " byte(s) past the end of the " << hi - lo << "-byte tensor at "
          << hex_address(lo) << " (into the grader's guard zone after it: the read is partly outside the tensor)";
    else if (a + bytes > hi)
        o << a - hi << " byte(s) past the end of the " << hi - lo << "-byte tensor at " << hex_address(lo)
          << " (into the grader's guard zone after it: the read is outside the tensor)";
    else
        o << lo - a << " byte(s) before the " << hi - lo << "-byte tensor at " << hex_address(lo)
          << " (into the grader's guard zone before it: the read is outside the tensor)";
    const std::string line = source_line(pc);
    if (!line.empty()) o << ", at " << line;
    raise_fault(cudaErrorIllegalAddress, o.str());
}

/// A device address outside the worker's cached ranges: looked up in the granule table.
[[gnu::noinline]] void check_device(uintptr_t a, std::size_t bytes, bool write, const void* pc) {
    Heap& h = heap();
    if (!h.contains(a)) return;
    const uint32_t id = h.granule_owner[(a - h.lo) >> kGranuleShift];
    if (id != 0) {
        const Allocation& al = h.allocs[id];  // the vector only grows under the lock; ids stay valid
        if (al.live && a + bytes <= al.start + al.bytes) {
            const uintptr_t lo = al.start + al.read_lo, hi = al.start + al.read_hi;
            const bool readable = a >= lo && a + bytes <= hi;
            // A write outside the window is left to the grader's guard check, which names it.
            if (!write && !readable) report_guard_read(al, a, bytes, pc);
            if (al.lazy) {
                lazy_touch(a, bytes, write);  // never cached: each access may need contents first
                return;
            }
            if (readable) {  // only the window is cached, so every access outside it comes back here
                CachedRanges& c = tls_ranges;
                const uint64_t generation = g_free_generation.load(std::memory_order_relaxed);
                if (c.generation != generation) c = CachedRanges{};
                c.generation = generation;
                c.start[c.next] = lo;
                c.end[c.next] = hi;
                c.next = (c.next + 1) % CachedRanges::kSize;
            }
            return;
        }
    }
    report_illegal_address(a, bytes, write, pc);
}

/// Every instrumented access of kernel code: small enough to be inlined into each hook, with the
/// reports out of line.
inline __attribute__((always_inline)) void check_inline(const void* addr, std::size_t bytes, bool write,
                                                        bool aligned_access, const void* pc, bool atomic) {
    UnitState* u = tls_unit;
    if (!u) return;  // host code of the submission, or the grader's own plain kernels
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (aligned_access && bytes > 1 && (a & (bytes - 1))) report_misaligned(a, bytes, write, pc);
    if (a - u->arena_lo < u->arena_span) {
        if (__builtin_expect(tls_trace != nullptr, 0)) trace_access(a, bytes, write, true, pc);
        check_shared_bounds(*u, a - u->arena_lo, bytes, write, pc);
        if (!atomic) shared_access(*u, a - u->arena_lo, bytes, write, pc);
        else shared_unordered_access(a - u->arena_lo, bytes, write);  // atomics never race, but they write
        return;
    }
    if (a - g_heap_lo >= kHeapBytes) {
        // Not device memory: the fiber's stack, thread-locals, the launch's parameters, the module's
        // globals (nine in ten of a kernel's accesses: nothing more is asked of them here). A wild
        // address that no mapping holds faults when the access runs, and wild_addresses.cpp reports
        // it; one past the 47-bit user space raises a fault that does not say the address, so it is
        // reported here.
        if (__builtin_expect((a >> kUserAddressBits) != 0, 0)) report_illegal_address(a, bytes, write, pc);
        return;
    }
    if (__builtin_expect(tls_trace != nullptr, 0)) trace_access(a, bytes, write, false, pc);
    const CachedRanges& c = tls_ranges;
    if (c.generation == g_free_generation.load(std::memory_order_relaxed))
        for (int i = 0; i < CachedRanges::kSize; ++i)
            if (a >= c.start[i] && a + bytes <= c.end[i]) return;
    check_device(a, bytes, write, pc);
}

}  // namespace

void check_access(const void* addr, std::size_t bytes, bool write, bool aligned_access, const void* pc, bool atomic) {
    check_inline(addr, bytes, write, aligned_access, pc, atomic);
}

/// A volatile access: checked for bounds and alignment like any other, never a race (the GPU makes
/// it a relaxed access other threads see), and a volatile read lets the other threads run first,
/// so a loop that waits for another thread's volatile write reaches it instead of spinning forever.
void volatile_access(const void* addr, std::size_t bytes, bool write, bool aligned_access, const void* pc) {
    check_inline(addr, bytes, write, aligned_access, pc, true);
    if (!write && tls_unit) yield_thread();
}

// ---- source lines ------------------------------------------------------------------------

std::string source_line(const void* pc) {
    if (!pc) return "";
    static std::mutex mu;
    static std::unordered_map<const void*, std::string> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(pc);
    if (it != cache.end()) return it->second;
    std::string result;
    Dl_info info{};
    if (dladdr(pc, &info) && info.dli_fname) {
        // The return address points after the call; one byte back is inside it.
        const uintptr_t offset = reinterpret_cast<uintptr_t>(pc) - 1 - reinterpret_cast<uintptr_t>(info.dli_fbase);
        const std::string cmd = "addr2line -i -e '" + std::string(info.dli_fname) + "' " + hex_address(offset) + " 2>/dev/null";
        if (FILE* f = popen(cmd.c_str(), "r")) {
            // With -i, inlined frames come innermost first: the first one outside the emulator's
            // own headers is the kernel's line.
            char buf[1024];
            while (std::fgets(buf, sizeof buf, f)) {
                std::string frame = buf;
                while (!frame.empty() && (frame.back() == '\n' || frame.back() == '\r')) frame.pop_back();
                const std::size_t disc = frame.find(" (discriminator");
                if (disc != std::string::npos) frame.erase(disc);
                if (frame.rfind("??", 0) == 0) continue;
                if (frame.find("/emulator/include/") != std::string::npos) continue;
                const std::size_t slash = frame.rfind('/');
                if (slash != std::string::npos) frame.erase(0, slash + 1);
                result = frame;
                break;
            }
            pclose(f);
        }
    }
    cache.emplace(pc, result);
    return result;
}

}  // namespace emu

// ---- the ThreadSanitizer entry points the compiler's instrumentation calls ---------------

#define EMU_RA __builtin_extract_return_addr(__builtin_return_address(0))
#define EMU_HOOK(n)                                                                                               \
    extern "C" void __tsan_read##n(void* p) { emu::check_inline(p, n, false, true, EMU_RA, false); }                    \
    extern "C" void __tsan_write##n(void* p) { emu::check_inline(p, n, true, true, EMU_RA, false); }                    \
    extern "C" void __tsan_unaligned_read##n(void* p) { emu::check_inline(p, n, false, false, EMU_RA, false); }         \
    extern "C" void __tsan_unaligned_write##n(void* p) { emu::check_inline(p, n, true, false, EMU_RA, false); }         \
    extern "C" void __tsan_volatile_read##n(void* p) { emu::volatile_access(p, n, false, true, EMU_RA); }             \
    extern "C" void __tsan_volatile_write##n(void* p) { emu::volatile_access(p, n, true, true, EMU_RA); }             \
    extern "C" void __tsan_unaligned_volatile_read##n(void* p) { emu::volatile_access(p, n, false, false, EMU_RA); }  \
    extern "C" void __tsan_unaligned_volatile_write##n(void* p) { emu::volatile_access(p, n, true, false, EMU_RA); }
EMU_HOOK(1)
EMU_HOOK(2)
EMU_HOOK(4)
EMU_HOOK(8)
EMU_HOOK(16)
extern "C" void __tsan_read_range(void* p, unsigned long n) { emu::check_inline(p, n, false, false, EMU_RA, false); }
extern "C" void __tsan_write_range(void* p, unsigned long n) { emu::check_inline(p, n, true, false, EMU_RA, false); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

// ---- UndefinedBehaviorSanitizer's alignment check (-fsanitize=alignment) -----------------
// The compiler may copy a 16-byte aligned struct (a Pack of 8 halves) field by field, so the
// access hooks above see 2- or 4-byte accesses; nvcc loads it with one 16-byte instruction.
// The alignment check sees the typed load or store itself, with the type's alignment.

namespace {
struct UbsanMismatch {
    emu::ubsan::Location location;
    const emu::ubsan::Type* type;
    unsigned char log_alignment;
    /// 0 load, 1 store, 2 reference binding (g++ checks a whole-struct copy there, `T v = *p`, and
    /// sometimes only there); member access and calls are not checked: they touch one field.
    unsigned char check_kind;
};

void typed_access(const UbsanMismatch* d, uintptr_t p, const void* pc) {
    if (d->check_kind > 2) return;
    const std::string type = d->type ? std::string(d->type->name) : std::string("value");
    emu::check_typed_alignment(reinterpret_cast<const void*>(p), std::size_t(1) << d->log_alignment, type.c_str(),
                               d->check_kind, pc);
}
}  // namespace

extern "C" void __ubsan_handle_type_mismatch_v1(UbsanMismatch* d, uintptr_t p) { typed_access(d, p, EMU_RA); }
extern "C" void __ubsan_handle_type_mismatch_v1_abort(UbsanMismatch* d, uintptr_t p) { typed_access(d, p, EMU_RA); }

// Atomics of kernel code (atomicAdd and friends): checked like a plain access, then done.
#define EMU_ATOMIC(bits, T)                                                                                         \
    extern "C" T __tsan_atomic##bits##_load(const volatile T* p, int mo) {                                         \
        emu::check_access(const_cast<T*>(p), sizeof(T), false, true, EMU_RA, true);                                      \
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                                \
    }                                                                                                               \
    extern "C" void __tsan_atomic##bits##_store(volatile T* p, T v, int mo) {                                      \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        __atomic_store_n(p, v, __ATOMIC_SEQ_CST);                                                                   \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_exchange(volatile T* p, T v, int mo) {                                      \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                                         \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_fetch_add(volatile T* p, T v, int mo) {                                     \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                                          \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_fetch_sub(volatile T* p, T v, int mo) {                                     \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);                                                          \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_fetch_and(volatile T* p, T v, int mo) {                                     \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                                                          \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_fetch_or(volatile T* p, T v, int mo) {                                      \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                                           \
    }                                                                                                               \
    extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile T* p, T* expected, T desired, int mo,     \
                                                                 int fmo) {                                         \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
    }                                                                                                               \
    extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile T* p, T* expected, T desired, int mo,       \
                                                               int fmo) {                                           \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        return __atomic_compare_exchange_n(p, expected, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
    }                                                                                                               \
    extern "C" T __tsan_atomic##bits##_compare_exchange_val(volatile T* p, T expected, T desired, int mo,          \
                                                            int fmo) {                                              \
        emu::check_access(const_cast<T*>(p), sizeof(T), true, true, EMU_RA, true);                                       \
        __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);              \
        return expected;                                                                                            \
    }
EMU_ATOMIC(8, uint8_t)
EMU_ATOMIC(16, uint16_t)
EMU_ATOMIC(32, uint32_t)
EMU_ATOMIC(64, uint64_t)
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) {}
