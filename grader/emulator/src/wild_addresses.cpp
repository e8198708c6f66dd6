/// @file wild_addresses.cpp
/// @brief A kernel's access far outside the device range (a 32-bit index that wrapped and was then
///        sign-extended, a garbage pointer, a null pointer): an illegal address, as on a GPU, and not
///        a crash of the grader. Two ways in: the instrumented access (memory.cpp sends here what is
///        neither device memory nor the fiber's own stack), and, for a load the compiler does not
///        instrument, the SIGSEGV it raises while a fiber runs the kernel's code.
///
/// The rule: an address that no mapping of the process holds is illegal. A mapped one outside the
/// device range is let through: the module's __device__/__constant__ variables, thread-locals such
/// as threadIdx, a kernel's parameters wherever the launch keeps them, and the emulator's own host
/// memory that its headers' inline code reads are all there, and telling them from a host pointer
/// the kernel must not touch would need a table of every host allocation. A wild offset of 2^32
/// elements or more almost always lands in the unmapped bulk of the 128 TiB address space.
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

#include "internal.h"
#include "scheduler_state.h"

namespace emu {
namespace {

constexpr int kPageShift = 12;
constexpr int kCachedPages = 16;

/// Pages outside the device range this worker's kernels touched and found mapped, by page number
/// (+1, so 0 is empty), one slot per page number modulo kCachedPages.
thread_local __attribute__((tls_model("initial-exec"))) uintptr_t tls_mapped_pages[kCachedPages];

/// Whether the page holding `a` is mapped (its protection aside), asked of the kernel once and then
/// remembered: msync fails with ENOMEM on an address no mapping holds.
bool page_mapped(uintptr_t a) {
    const uintptr_t page = a >> kPageShift;
    uintptr_t& slot = tls_mapped_pages[page % kCachedPages];
    if (slot == page + 1) return true;
    if (msync(reinterpret_cast<void*>(page << kPageShift), std::size_t(1) << kPageShift, MS_ASYNC) != 0) return false;
    slot = page + 1;
    return true;
}

/// The load address of the emulator's own library: a fault there is the emulator's bug.
const void* g_emulator_base = nullptr;
struct sigaction g_previous_segv, g_previous_sigbus;

/// Whether the running code is a kernel's: a fiber of a unit runs, on its own stack, outside the
/// emulator's library (the kernel's code, or a libc routine it called).
bool in_kernel_code(uintptr_t pc, uintptr_t sp) {
    const ThreadState* t = tls_thread;
    if (!tls_unit || !t || !t->stack.sp) return false;
    const uintptr_t stack_lo = reinterpret_cast<uintptr_t>(t->stack.sp) - t->stack.size;
    if (sp - stack_lo >= t->stack.size) return false;
    Dl_info info{};
    return !(dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_fbase == g_emulator_base);
}

/// A fault (SIGSEGV, or SIGBUS) the instrumentation did not see coming: inside a kernel it becomes the kernel's illegal
/// address (the fiber is abandoned, as for any fault, and never returns here); anything else goes
/// to the handler in force before, or crashes as it would have.
void on_fault(int sig, siginfo_t* info, void* context) {
#if defined(__x86_64__)
    const auto* uc = static_cast<const ucontext_t*>(context);
    const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    const uintptr_t sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
    if (in_kernel_code(pc, sp)) {
        // One byte past the instruction: source_line steps back one byte, as from a return address.
        const void* line_pc = reinterpret_cast<const void*>(pc + 1);
        if (info->si_code == SI_KERNEL) {
            // A general-protection fault: an address past the 47-bit user space (non-canonical), which
            // the processor does not report.
            raise_fault(cudaErrorIllegalAddress, "illegal address: " + where_now() +
                                                     " accesses an address outside the 47-bit user address space "
                                                     "(non-canonical: the processor does not say which), not "
                                                     "inside any allocation" +
                                                     (source_line(line_pc).empty() ? "" : ", at " + source_line(line_pc)));
        }
        const bool page_fault = uc->uc_mcontext.gregs[REG_TRAPNO] == 14;
        const bool write = page_fault && (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // the page fault's error code
        report_illegal_address(reinterpret_cast<uintptr_t>(info->si_addr), 0, write, line_pc);
    }
#endif
    const struct sigaction& previous = sig == SIGBUS ? g_previous_sigbus : g_previous_segv;
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) return previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        return previous.sa_handler(sig);
    }
    sigaction(sig, &previous, nullptr);  // the access faults again, with the default action
}

/// Installed when the library loads, before any kernel runs; a handler installed later (sampling.cpp's)
/// hands on what is not its own.
[[gnu::constructor]] void install_wild_access_handler() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&on_fault), &info)) g_emulator_base = info.dli_fbase;
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    // SA_NODEFER: the fiber leaves the handler for the scheduler and never returns, so SIGSEGV must
    // not stay blocked behind it.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
    sigaction(SIGBUS, &sa, &g_previous_sigbus);  // a mapped file's page past its end
}

}  // namespace

void check_outside_device(uintptr_t a, std::size_t bytes, bool write, const void* pc) {
    const uintptr_t last = a + (bytes ? bytes - 1 : 0);
    if (page_mapped(a) && (last >> kPageShift == a >> kPageShift || page_mapped(last))) return;
    report_illegal_address(a, bytes, write, pc);
}

}  // namespace emu
