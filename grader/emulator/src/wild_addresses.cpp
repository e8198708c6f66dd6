/// @file wild_addresses.cpp
/// @brief A kernel's access far outside the device range (a 32-bit index that wrapped and was then
///        sign-extended, a garbage pointer, a null pointer): an illegal address, as on a GPU, and not
///        a crash of the grader. The access checks (memory.cpp) let every address outside the device
///        range through: nine in ten of a kernel's accesses are to its fiber's stack, thread-locals
///        such as threadIdx, the launch's parameters or the module's globals, and asking more of them
///        costs grading time. A wild address that no mapping holds faults when the access runs; the
///        handler here turns that fault, raised by a kernel's code on a fiber, into the kernel's
///        illegal-address fault (its line, thread, block and address), the way the checks report
///        one. A fault anywhere else (the grader's or the emulator's own bug) stays a crash.
///        A wild address that lands in mapped host memory is not seen: telling it from a host
///        pointer the kernel may use would need a table of every host allocation.
#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>

#include <cstdint>
#include <string>

#include "internal.h"
#include "scheduler_state.h"

namespace emu {
namespace {

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

/// A fault (SIGSEGV, or SIGBUS): raised by a kernel's code it becomes the kernel's illegal address
/// (the fiber is abandoned, as for any fault, and never returns here); anything else goes to the
/// handler in force before, or crashes as it would have.
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

/// Installed when the library loads, before any kernel runs; a handler installed later
/// (sampling.cpp's) hands on what is not its own.
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
}  // namespace emu
