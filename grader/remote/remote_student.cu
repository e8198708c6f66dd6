/// @file remote_student.cu
#include "remote/remote_student.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <type_traits>

#include "engine/buffer_hooks.h"
#include "engine/launch_guard.h"
#include "remote/proxy.h"
#include "remote/remote_calls.h"
#include "remote/remote_registry.h"
#include "remote/shared_buffers.h"

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

/// Sends each link's queued calls; returns the wall-clock seconds from each send to its answer, summed.
double end_batch() {
    double seconds = 0;
    for (Link& l : g_links) {
        if (!l.batching) continue;
        l.batching = false;
        if (l.queued == 0) continue;
        Writer w;
        w.put<uint32_t>(l.queued);
        w.append(l.batch.bytes());
        const auto start = std::chrono::steady_clock::now();
        try {
            l.channel->send(Kind::batch, w.bytes());
        } catch (const ChannelError& e) {
            g_lost = true;
            lost(l, std::string("is gone (") + e.what() + ")");
        }
        const Message m = await_reply(l);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        Reader r(m.body);
        const auto result = r.get<int64_t>();
        if (result != 0)
            throw std::runtime_error(std::string("a timed launch returned ") +
                                     cudaGetErrorName(static_cast<cudaError_t>(result)));
    }
    return seconds;
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
