/// @file remote_student.cu
#include "remote/remote_student.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "engine/buffer_hooks.h"
#include "engine/launch_guard.h"
#include "remote/proxy.h"
#include "remote/remote_calls.h"
#include "remote/remote_registry.h"
#include "remote/shared_buffers.h"
#include "remote/stream_gate.h"
#include "workbook/cuda_check.h"

namespace workbook::remote {
namespace {

double g_timeout = 60;
bool g_lost = false;

/// One connected host process.
struct Link {
    std::unique_ptr<Channel> channel;
    bool batching = false;
    uint32_t queued = 0;
    Writer batch;
    std::string who;  ///< "your code's process" or "the reference's process"
};

Link g_links[2];

/// Turns the host's failure or silence into the error that ends the run, naming the real cause.
[[noreturn]] void lost(const Link& link, const std::string& why) {
    throw FatalDeviceError(link.who + " " + why);
}

Message await_reply(Link& link) {
    Message m;
    try {
        m = link.channel->receive(g_timeout);
    } catch (const ChannelError& e) {
        g_lost = true;
        const std::string what = e.what();
        if (what.rfind("no answer", 0) == 0)
            lost(link, "did not finish the call within " + std::to_string(static_cast<int>(g_timeout)) +
                           " s (a hang, or a kernel that never ends)");
        lost(link, "ended during the call (" + what + ")");
    }
    if (m.kind == Kind::failure) {
        Reader r(m.body);
        lost(link, "reported: " + r.get_text());
    }
    if (m.kind != Kind::reply) {
        g_lost = true;
        lost(link, "answered with a message that is not a reply");
    }
    return m;
}

void begin_batch() {
    for (Link& l : g_links) {
        l.batching = l.channel != nullptr;
        l.queued = 0;
        l.batch.clear();
    }
}

void send(Link& l, Kind kind, const Writer& w) {
    try {
        l.channel->send(kind, w.bytes());
    } catch (const ChannelError& e) {
        g_lost = true;
        lost(l, std::string("is gone (") + e.what() + ")");
    }
}

void check_result(Reader& r) {
    const auto result = r.get<int64_t>();
    if (result != 0)
        throw std::runtime_error(std::string("a timed launch returned ") + cudaGetErrorName(static_cast<cudaError_t>(result)));
}

/// The wall clock (WORKBOOK_REMOTE_CLOCK=wall, and where the driver lacks stream memory operations):
/// the grader's work first, then the time from sending the batch to the answer, which comes once the
/// other process has waited for its whole device. The hop between the processes, their wake-ups and
/// the other process's graph launch are inside it.
void wall_batch(Link& l, cudaStream_t stream, TimedBatch& batch) {
    batch.before_clock(stream);
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    Writer w;
    w.put<uint32_t>(l.queued);
    w.append(l.batch.bytes());
    const auto start = std::chrono::steady_clock::now();
    send(l, Kind::batch, w);
    const Message m = await_reply(l);
    batch.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    batch.after_clock(stream);
    batch.clock = "wall";
    Reader r(m.body);
    check_result(r);
}

/// Where the timed batches' go and done words live: one small buffer shared with both processes,
/// four words per side (go, done), counting batches.
struct GateWords {
    uint32_t* words = nullptr;
    uint64_t id = 0, offset = 0;
    uint32_t count = 0;
    cudaEvent_t marks[3] = {};  ///< before the grader's own work, clock start, clock stop
};
GateWords g_gate;

/// "stream" unless WORKBOOK_REMOTE_CLOCK=wall asks for the wall clock or the driver lacks the operations.
bool use_stream_clock() {
    const char* asked = std::getenv("WORKBOOK_REMOTE_CLOCK");
    if (asked && std::string(asked) == "wall") return false;
    return StreamGate::get().available();
}

/// Undoes a gate the other process will never open: the grader's stream stops waiting for it.
void release_gate(void* done, uint32_t n) {
    cudaStream_t side = nullptr;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return;
    cudaMemcpyAsync(done, &n, sizeof n, cudaMemcpyHostToDevice, side);
    cudaStreamSynchronize(side);
    cudaStreamDestroy(side);
    cudaGetLastError();
}

/// The stream clock. The other process queues the batch on its stream behind a wait for `go` and
/// answers; then the grader's stream runs its own work (poison, L2 clear), records the start, writes
/// `go`, waits for the other process's stream to write `done` after the last call, and records the
/// stop. Both events are the grader's, on its stream: no process hop and no host clock lies between
/// them, only the GPU's switch from one process's context to the other's and back (0.296-0.301 ms a
/// batch on an H200, measured against the other process's own events). The work the grader queues
/// right behind the stop (the count of unwritten outputs) sees any launch that the other process had
/// not finished when it wrote `done`.
void stream_batch(Link& l, int side, cudaStream_t stream, TimedBatch& batch) {
    const StreamGate& gate = StreamGate::get();
    if (!g_gate.words) {
        g_gate.words = static_cast<uint32_t*>(allocate_device(4096));
        WB_CUDA_CHECK(cudaMemset(g_gate.words, 0, 4096));
        WB_CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any stream of either process reads the words
        if (!SharedBuffers::instance().locate(g_gate.words, g_gate.id, g_gate.offset))
            throw std::logic_error("the gate's words are not in a shared buffer");
        for (cudaEvent_t& e : g_gate.marks) WB_CUDA_CHECK(cudaEventCreate(&e));
    }
    const uint32_t n = ++g_gate.count;
    uint32_t* go = g_gate.words + 4 * side;
    uint32_t* done = go + 1;
    Writer w;
    w.put<uint32_t>(l.queued);
    w.put<uint64_t>(g_gate.id);
    w.put<uint64_t>(g_gate.offset + 16 * side);
    w.put<uint64_t>(g_gate.offset + 16 * side + 4);
    w.put<uint32_t>(n);
    w.append(l.batch.bytes());
    const auto start = std::chrono::steady_clock::now();
    send(l, Kind::timed_batch, w);
    Message queued = await_reply(l);  // not yet on the grader's stream: nothing waits on `done` yet
    bool waiting = false;
    try {
        WB_CUDA_CHECK(cudaEventRecord(g_gate.marks[0], stream));
        batch.before_clock(stream);
        WB_CUDA_CHECK(cudaEventRecord(g_gate.marks[1], stream));
        gate.write(stream, go, n);
        gate.wait(stream, done, n);
        waiting = true;
        WB_CUDA_CHECK(cudaEventRecord(g_gate.marks[2], stream));
        batch.after_clock(stream);
        const Message finished = await_reply(l);
        const std::string err = wait_with_watchdog(stream, "the timed batch of " + l.who);
        if (!err.empty()) throw std::runtime_error("the timed batch: " + err);
        waiting = false;
        float prelude_ms = 0, batch_ms = 0;
        WB_CUDA_CHECK(cudaEventElapsedTime(&prelude_ms, g_gate.marks[0], g_gate.marks[1]));
        WB_CUDA_CHECK(cudaEventElapsedTime(&batch_ms, g_gate.marks[1], g_gate.marks[2]));
        batch.seconds = batch_ms * 1e-3;
        batch.clock = "stream";
        Reader q(queued.body), f(finished.body);
        check_result(q);
        check_result(f);
        if (std::getenv("WORKBOOK_REMOTE_DIAG")) {
            // The other process's own events around its launches: not trusted, shown to find where time goes.
            const double host_ms = f.get<double>();
            const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::fprintf(stderr, "remote-diag side=%d calls=%u clock_ms=%.4f their_events_ms=%.4f prelude_ms=%.4f "
                                 "send_to_done_ms=%.4f\n", side, l.queued, batch_ms, host_ms, prelude_ms, wall_ms);
        }
    } catch (...) {
        if (waiting && !device_hung()) release_gate(done, n);
        throw;
    }
}

/// Sends the queued calls of the side that queued them and times them (TimedBatch).
void end_batch(cudaStream_t stream, TimedBatch& batch) {
    Link* active = nullptr;
    for (Link& l : g_links) {
        if (!l.batching) continue;
        l.batching = false;
        if (l.queued == 0) continue;
        if (active) throw std::logic_error("a timed batch with calls to both processes");
        active = &l;
    }
    if (!active) {
        batch.before_clock(stream);
        batch.after_clock(stream);
        return;
    }
    if (use_stream_clock()) stream_batch(*active, static_cast<int>(active - g_links), stream, batch);
    else wall_batch(*active, stream, batch);
    buffer_hooks().clock_used = batch.clock;
}

}  // namespace

namespace detail {

bool queue_call(int side, const Writer& w) {
    Link& link = g_links[side];
    if (!link.batching) return false;
    link.batch.append(w.bytes());
    ++link.queued;
    return true;
}

Message send_call(int side, const Writer& w) {
    Link& link = g_links[side];
    try {
        link.channel->send(Kind::call, w.bytes());
    } catch (const ChannelError& e) {
        g_lost = true;
        lost(link, std::string("is gone (") + e.what() + ")");
    }
    return await_reply(link);
}

}  // namespace detail

void set_call_timeout(double seconds) { g_timeout = seconds; }

bool host_lost() { return g_lost; }

std::unique_ptr<Submission> connect(Side side, int channel_fd, int lesson, const std::string& label, double seconds) {
    Link& link = g_links[side];
    link.channel = std::make_unique<Channel>(channel_fd);
    link.who = side == student_side ? "the process running your code" : "the reference's process";
    const RemoteLesson* remote = find_remote_lesson(lesson);
    const void* table = !remote ? nullptr : side == student_side ? remote->student_table() : remote->reference_table();
    if (!table) throw std::runtime_error("lesson " + std::to_string(lesson) + " cannot be graded remotely");
    Message hello;
    try {
        hello = link.channel->receive(seconds);
    } catch (const ChannelError& e) {
        g_lost = true;
        throw std::runtime_error(link.who + " ended before it was ready (" + e.what() + ")");
    }
    Reader r(hello.body);
    if (hello.kind != Kind::hello) {
        g_lost = true;
        throw std::runtime_error(link.who + " sent something else before it was ready");
    }
    const auto ok = r.get<uint8_t>();
    const std::string message = r.get_text();
    if (!ok) throw std::runtime_error(message);
    SharedBuffers::instance().attach(link.channel.get());
    return std::make_unique<Submission>(table, label);
}

std::unique_ptr<Submission> start_host(Side side, const std::string& library, int lesson, double seconds) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
        throw std::runtime_error("cannot make a socket pair for the reference's process");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("cannot start the reference's process");
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fds[0]);
        const int fd = dup(fds[1]);  // without close-on-exec
        const std::string fd_text = std::to_string(fd), lesson_text = std::to_string(lesson);
        execl("/proc/self/exe", "wb-grader", "--serve", fd_text.c_str(), "--lesson", lesson_text.c_str(), "--student",
              library.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    return connect(side, fds[0], lesson, library, seconds);
}

void install_remote_hooks() {
    install_shared_buffer_hooks();
    BufferHooks& h = buffer_hooks();
    h.begin_batch = begin_batch;
    h.end_batch = end_batch;
}

}  // namespace workbook::remote
