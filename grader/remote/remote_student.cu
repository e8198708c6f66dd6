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
#include <utility>
#include <vector>

#include "engine/buffer_hooks.h"
#include "engine/launch_guard.h"
#include "remote/batch_watchdog.h"
#include "remote/proxy.h"
#include "remote/remote_calls.h"
#include "remote/remote_registry.h"
#include "remote/remote_trace.h"
#include "remote/shared_buffers.h"
#include "remote/stream_gate.h"
#include "workbook/cuda_check.h"
#include "workbook/gate.h"

namespace workbook::remote {
namespace {

double g_timeout = 60;
bool g_lost = false;
/// Seconds the grader may take to queue its own work under its hold (milliseconds, normally); past
/// them the watchdog releases the hold and the batch fails, naming the phase.
constexpr double kHoldSeconds = 10;

/// One connected host process.
struct Link {
    std::unique_ptr<Channel> channel;
    bool batching = false;
    uint32_t queued = 0;
    Writer batch;
    /// Where each launch of the batch ends: calls queued and bytes of `batch` by then.
    std::vector<std::pair<uint32_t, uint32_t>> launch_ends;
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
    remote_trace("grader", "begin_batch");
    for (Link& l : g_links) {
        l.batching = l.channel != nullptr;
        l.queued = 0;
        l.batch.clear();
        l.launch_ends.clear();
    }
}

void mark_launch() {
    for (Link& l : g_links) {
        const uint32_t before = l.launch_ends.empty() ? 0 : l.launch_ends.back().first;
        if (l.batching && l.queued > before)
            l.launch_ends.emplace_back(l.queued, static_cast<uint32_t>(l.batch.bytes().size()));
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
    batch.before_each(stream);
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    Writer w;
    w.put<uint32_t>(l.queued);
    w.append(l.batch.bytes());
    const auto start = std::chrono::steady_clock::now();
    remote_trace("grader", "wall: send batch calls=" + std::to_string(l.queued) + "; awaiting the reply");
    send(l, Kind::batch, w);
    const Message m = await_reply(l);
    remote_trace("grader", "wall: reply received");
    batch.group_seconds = {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
    batch.group_launches = {static_cast<int>(std::max<size_t>(1, l.launch_ends.size()))};
    batch.after_clock(stream);
    batch.clock = "wall";
    Reader r(m.body);
    check_result(r);
}

/// The words the timed batches are gated on: in one small buffer shared with both processes, per
/// side a go and a done word (16 bytes apart); and the grader's own hold word, in mapped pinned host
/// memory, which its stream waits on and the CPU writes. The hold is released by a store from the
/// CPU, not by a write queued on another stream of the grader's: an order made through stream memory
/// operations is invisible to CUDA's scheduler, which may put that write behind the very wait it
/// ends (the driver's documented deadlock), and a CPU store also lets the watchdog release a hold
/// without a CUDA call that could block.
struct GateWords {
    uint32_t* words = nullptr;
    uint64_t id = 0, offset = 0;
    uint32_t count = 0;      ///< gate values handed out so far (every group takes one)
    uint32_t holds = 0;      ///< the grader's own hold word's last value
    uint32_t* hold_host = nullptr;  ///< the hold word, as the CPU writes it (cudaHostAllocMapped)
    void* hold_device = nullptr;    ///< the same word, as the grader's stream waits on it
    std::vector<cudaEvent_t> marks;
    std::vector<double> calibration;  ///< the gate's own time, each empty group's, seconds
    uint32_t batches = 0;

    cudaEvent_t mark(size_t i) {
        while (marks.size() <= i) {
            marks.emplace_back();
            WB_CUDA_CHECK(cudaEventCreate(&marks.back()));
        }
        return marks[i];
    }
    uint32_t* go(int side_index) { return words + 4 * side_index; }
    uint32_t* done(int side_index) { return words + 4 * side_index + 1; }
};
GateWords g_gate;

/// The clock of the timed batches: WORKBOOK_REMOTE_CLOCK, "grouped" when unset; "wall" where the
/// driver lacks stream memory operations. "grouped" and "stream" gate the other process on the GPU:
/// "grouped" (the default since it ran on one H100 and two H200 at e3441a1, within 1-4% of the
/// one-process figure on shapes of 256 MiB and more, where "wall" read about 0.7) times the launches in
/// the one-process timing's groups, less the gate's own time; "stream" times the whole batch as one
/// group, nothing taken off (the clock before the groups, kept to compare with); "wall" the grader's
/// wall clock from sending a batch to its answer.
std::string remote_clock() {
    const char* asked = std::getenv("WORKBOOK_REMOTE_CLOCK");
    const std::string clock = asked && *asked ? asked : "grouped";
    if (clock != "grouped" && clock != "stream" && clock != "wall")
        throw std::runtime_error("WORKBOOK_REMOTE_CLOCK=" + clock + ": the remote clocks are grouped, stream and wall");
    return clock != "wall" && StreamGate::get().available() ? clock : "wall";
}

/// Releases the grader's hold: a store from the CPU, which nothing on the GPU can delay.
void open_hold(uint32_t* word, uint32_t n) { __atomic_store_n(word, n, __ATOMIC_SEQ_CST); }

/// Opens a gate the other process will never open: the grader's stream stops waiting on it.
void release_gate(void* word, uint32_t n) {
    cudaStream_t side = nullptr;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return;
    cudaMemcpyAsync(word, &n, sizeof n, cudaMemcpyHostToDevice, side);
    cudaStreamSynchronize(side);
    cudaStreamDestroy(side);
    cudaGetLastError();
}

void ensure_gate() {
    if (g_gate.words) return;
    remote_trace("grader", "making the gate's words (shared device memory, mapped host memory for the hold)");
    g_gate.words = static_cast<uint32_t*>(allocate_device(4096));
    WB_CUDA_CHECK(cudaMemset(g_gate.words, 0, 4096));
    void* host = nullptr;
    WB_CUDA_CHECK(cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    g_gate.hold_host = static_cast<uint32_t*>(host);
    open_hold(g_gate.hold_host, 0);
    WB_CUDA_CHECK(cudaHostGetDevicePointer(&g_gate.hold_device, host, 0));
    WB_CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any stream of either process reads the words
    if (!SharedBuffers::instance().locate(g_gate.words, g_gate.id, g_gate.offset))
        throw std::logic_error("the gate's words are not in a shared buffer");
    remote_trace("grader", "gate's words made");
}

/// "<first>..<last>" of a batch's go and done values, for the trace.
std::string span(uint32_t n0, uint32_t groups) {
    return groups ? std::to_string(n0) + ".." + std::to_string(n0 + groups - 1) : std::string("none");
}

/// One gated batch on `l`'s process: its calls in groups (`ends[g]`: calls and bytes by the end of
/// group g), each queued there behind a wait for that group's go and followed by a write of its
/// done. On the grader's stream: `before` (poison), then, held until all of it is queued (so the GPU
/// runs it back to back, whatever the CPU does meanwhile), per group `before_each` (L2 clear), the
/// start event, go, the wait for done, the stop event; then `after` (the unwritten count). Nothing
/// under the hold may wait for the device (it would wait for ever): the batch watchdog releases a
/// hold kept past kHoldSeconds and the batch fails, naming the phase.
/// Returns each group's seconds between its events, and (via `own`) the grader's own work between
/// the clocks; `their_ms`, the other process's own events around its launches (a diagnostic).
std::vector<double> gated_batch(Link& l, int side, cudaStream_t stream, uint32_t calls,
                                const std::vector<unsigned char>& bytes,
                                const std::vector<std::pair<uint32_t, uint32_t>>& ends,
                                const std::function<void(cudaStream_t)>& before,
                                const std::function<void(cudaStream_t)>& before_each,
                                const std::function<void(cudaStream_t)>& after, double& own, double& their_ms) {
    const StreamGate& gate = StreamGate::get();
    BatchWatchdog& dog = batch_watchdog();
    struct EndWatch {
        ~EndWatch() { batch_watchdog().end(); }  // however this returns: a watch left on would end the run
    } end_watch;
    const double backstop = batch_phase_seconds(g_timeout, std::getenv("WORKBOOK_REMOTE_PHASE_SECONDS"));
    dog.begin("making the gate's words", backstop);
    ensure_gate();
    const auto groups = static_cast<uint32_t>(ends.size());
    const uint32_t n0 = g_gate.count + 1;
    g_gate.count += groups;
    const std::string who = "side=" + std::to_string(side) + " ";
    Writer w;
    w.put<uint32_t>(calls);
    w.put<uint64_t>(g_gate.id);
    w.put<uint64_t>(g_gate.offset + 16 * side);
    w.put<uint64_t>(g_gate.offset + 16 * side + 4);
    w.put<uint32_t>(n0);
    w.put<uint32_t>(groups);
    for (const auto& e : ends) {
        w.put<uint32_t>(e.first);
        w.put<uint32_t>(e.second);
    }
    w.append(bytes);
    // Every wait below has its own limit (g_timeout, the stream's watchdog); the batch watchdog is
    // the last resort for a wait inside a CUDA call, which nothing else can end.
    dog.begin("sending the batch to " + l.who + " and waiting until it is queued", backstop);
    remote_trace("grader", who + "send timed_batch calls=" + std::to_string(calls) + " groups=" + std::to_string(groups) +
                               " go/done=" + span(n0, groups) + "; awaiting 'queued'");
    send(l, Kind::timed_batch, w);
    const Message queued = await_reply(l);  // the other process has queued it all (or says why it launches late)
    const uint32_t hold = ++g_gate.holds;
    remote_trace("grader", who + "'queued' received; hold=" + std::to_string(hold));
    (void)g_gate.mark(2 * groups);  // the events made now: nothing queued under the hold may block
    try {
        // The poison runs at once, not under the hold: with it, a batch of 256 small calls would put
        // over a thousand operations behind one wait, past what a stream queues before its caller blocks.
        dog.begin("poisoning the outputs before the batch of " + l.who, backstop);
        if (before) before(stream);
        remote_trace("grader", who + "poison queued");
        uint32_t* hold_word = g_gate.hold_host;
        dog.begin("queuing the grader's own work (" + std::to_string(groups) + " groups) behind its hold, for " + l.who,
                  kHoldSeconds, [hold_word, hold] {
                      open_hold(hold_word, hold);
                      remote_trace("grader", "watchdog released the hold=" + std::to_string(hold));
                  });
        gate.wait(stream, g_gate.hold_device, hold);
        remote_trace("grader", who + "stream waits for hold>=" + std::to_string(hold) + " (host word)");
        WB_CUDA_CHECK(cudaEventRecord(g_gate.mark(0), stream));
        for (uint32_t g = 0; g < groups; ++g) {
            if (before_each) before_each(stream);
            WB_CUDA_CHECK(cudaEventRecord(g_gate.mark(1 + 2 * g), stream));
            gate.write(stream, g_gate.go(side), n0 + g);
            gate.wait(stream, g_gate.done(side), n0 + g);
            WB_CUDA_CHECK(cudaEventRecord(g_gate.mark(2 + 2 * g), stream));
            if (remote_trace_on())
                remote_trace("grader", who + "group " + std::to_string(g) + " queued: write go=" + std::to_string(n0 + g) +
                                           ", wait done>=" + std::to_string(n0 + g));
        }
        if (after) after(stream);  // right behind the last stop: a launch still running then is seen
        remote_trace("grader", who + "count queued; releasing hold=" + std::to_string(hold));
        open_hold(hold_word, hold);  // everything is queued: the grader's stream may run
        dog.end();
        // Past its limit the watchdog released the hold: the batch still runs to its end (so the other
        // process's answer is read, and the next batch's is not taken for it), but it is not timed.
        const std::string late = dog.expired();
        dog.begin("waiting for " + l.who + " to finish the batch", backstop);
        remote_trace("grader", who + "hold released; awaiting 'finished' (the host's device synchronise)");
        const Message finished = await_reply(l);
        remote_trace("grader", who + "'finished' received; waiting for the grader's stream");
        dog.begin("waiting for the grader's stream to pass the batch's clocks, for " + l.who, backstop);
        const std::string err = wait_with_watchdog(stream, "the timed batch of " + l.who);
        dog.end();
        remote_trace("grader", who + "grader's stream passed the batch" + (err.empty() ? "" : ": " + err));
        if (!err.empty()) throw std::runtime_error("the timed batch: " + err);
        if (!late.empty()) throw std::runtime_error(late + "; the watchdog released the hold, so the batch is not timed");
        std::vector<double> seconds(groups);
        float total_ms = 0;
        WB_CUDA_CHECK(cudaEventElapsedTime(&total_ms, g_gate.mark(0), g_gate.mark(2 * groups)));
        double clocked = 0;
        for (uint32_t g = 0; g < groups; ++g) {
            float ms = 0;
            WB_CUDA_CHECK(cudaEventElapsedTime(&ms, g_gate.mark(1 + 2 * g), g_gate.mark(2 + 2 * g)));
            seconds[g] = ms * 1e-3;
            clocked += seconds[g];
        }
        own = total_ms * 1e-3 - clocked;
        Reader q(queued.body), f(finished.body);
        check_result(q);
        check_result(f);
        their_ms = f.get<double>();
        return seconds;
    } catch (...) {
        std::string why = "not a std::exception";
        try {
            throw;
        } catch (const std::exception& e) {
            why = e.what();
        } catch (...) {
        }
        remote_trace("grader", who + "batch failed: " + why);
        open_hold(g_gate.hold_host, hold);  // a store: safe even after a hang
        if (!device_hung()) {
            dog.begin("releasing the grader's gates after a failed batch of " + l.who, backstop);
            if (groups) release_gate(g_gate.done(side), n0 + groups - 1);
            remote_trace("grader", who + "gates released after the failure");
        }
        dog.end();
        throw;
    }
}

/// The gate's own time: empty groups gated through the reference's process (the grader's own code,
/// trusted), so the submission's process has no say in what is taken off its groups. The mean of
/// all such groups so far (what a batch of n groups pays is n times the mean, and the switch's time
/// is skewed: the median left about 5 us a group on at one launch a group), recalibrated every 32
/// batches. Each empty group is preceded by the
/// batch's own `before_each` (the L2 clear), as a timed group is: without it the switch to the other
/// process measured about 12 us a group less than it costs after a kernel of the grader's (an H100,
/// docs/results/gpu-check.md), and the grouped clock read 6% slow at one launch a group.
double gate_seconds(int active_side, const std::function<void(cudaStream_t)>& before_each) {
    if (g_gate.batches++ % 32 == 0) {
        const int side = g_links[reference_side].channel ? reference_side : active_side;
        Link& l = g_links[side];
        const std::vector<std::pair<uint32_t, uint32_t>> empty(16, {0, 0});
        double own = 0, their_ms = 0;
        for (double s : gated_batch(l, side, grader_stream(), 0, {}, empty, nullptr, before_each, nullptr, own,
                                       their_ms))
            g_gate.calibration.push_back(s);
    }
    double sum = 0;
    for (double v : g_gate.calibration) sum += v;
    return g_gate.calibration.empty() ? 0.0 : sum / static_cast<double>(g_gate.calibration.size());
}

/// The stream clock. The other process queues the batch on its stream, each group of launches behind
/// a wait for a word the grader writes (go) and followed by a write of another (done), and answers;
/// the grader's stream, per group, clears L2, records the start, writes go, waits for done and records
/// the stop. Both events are the grader's, on its stream: no process hop and no host clock lies
/// between them, only the GPU's switch from one process's context to the other's and back, a fixed
/// time (about 0.3 ms on an H200) measured by empty groups through the reference's process and taken
/// off every group. The grouping is the one-process timing's (sets_for), so the figures are alike.
/// Not `grouped` (the "stream" clock): the whole batch is one group, and nothing is taken off.
void stream_batch(Link& l, int side, cudaStream_t stream, TimedBatch& batch, bool grouped) {
    const double overhead = grouped ? gate_seconds(side, batch.before_each) : 0;
    std::vector<std::pair<uint32_t, uint32_t>> ends;
    std::vector<int> launches;
    // "stream": the whole batch is one group, as the clock before the groups timed it.
    const int per = grouped ? std::max(1, batch.group) : std::max<int>(1, static_cast<int>(l.launch_ends.size()));
    for (size_t i = 0; i < l.launch_ends.size(); i += per) {
        const size_t last = std::min(l.launch_ends.size(), i + per) - 1;
        ends.push_back(l.launch_ends[last]);
        launches.push_back(static_cast<int>(last - i + 1));
    }
    if (ends.empty() || ends.back().first != l.queued) {  // calls after the last mark: one more group
        ends.emplace_back(l.queued, static_cast<uint32_t>(l.batch.bytes().size()));
        launches.push_back(1);
    }
    double own = 0, their_ms = 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> seconds = gated_batch(l, side, stream, l.queued, l.batch.bytes(), ends, batch.before_clock,
                                              batch.before_each, batch.after_clock, own, their_ms);
    double clocked_ms = 0;
    for (double& s : seconds) {
        clocked_ms += s * 1e3;
        s = std::max(0.0, s - overhead);
    }
    batch.group_seconds = seconds;
    batch.group_launches = launches;
    batch.own_seconds = own;
    batch.clock = grouped ? "grouped" : "stream";
    buffer_hooks().gate_seconds = overhead;
    if (std::getenv("WORKBOOK_REMOTE_DIAG")) {
        // The other process's own events around its launches: not trusted, shown to find where time goes.
        const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "remote-diag side=%d calls=%u groups=%zu clock_ms=%.4f their_events_ms=%.4f gate_ms=%.4f "
                             "own_ms=%.4f send_to_done_ms=%.4f\n", side, l.queued, seconds.size(), clocked_ms, their_ms,
                     overhead * 1e3 * static_cast<double>(seconds.size()), own * 1e3, wall_ms);
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
    const std::string clock = remote_clock();
    remote_trace("grader", "end_batch clock=" + clock + " side=" + std::to_string(active - g_links) +
                               " calls=" + std::to_string(active->queued));
    if (clock == "wall") wall_batch(*active, stream, batch);
    else stream_batch(*active, static_cast<int>(active - g_links), stream, batch, clock == "grouped");
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
    h.mark_launch = mark_launch;
    h.end_batch = end_batch;
}

}  // namespace workbook::remote
