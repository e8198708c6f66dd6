/// @file submission_host.cu
#include "remote/submission_host.h"

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/lesson_registry.h"
#include "engine/launch_guard.h"
#include "remote/remote_calls.h"
#include "remote/remote_registry.h"
#include "remote/remote_trace.h"
#include "remote/stream_gate.h"
#include "engine/submission.h"

namespace workbook::remote {
namespace {

/// Waits for every kernel the calls started, on any stream; "" or what went wrong.
std::string finish_device_work(bool gpu) {
    if (!gpu) return "";
    remote_trace("host", "device synchronise (waits for every stream of this process)");
    const cudaError_t e = cudaDeviceSynchronize();
    remote_trace("host", std::string("device synchronise returned ") + cudaGetErrorName(e));
    if (e == cudaSuccess) return "";
    cudaGetLastError();
    return std::string("its kernel failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

/// A message kind's name, for the trace.
const char* kind_name(Kind k) {
    switch (k) {
        case Kind::share: return "share";
        case Kind::release: return "release";
        case Kind::call: return "call";
        case Kind::batch: return "batch";
        case Kind::timed_batch: return "timed_batch";
        default: return "other";
    }
}

void fail(Channel& c, const std::string& why) {
    Writer w;
    w.put_text(why);
    c.send(Kind::failure, w.bytes());
}

/// Waits for the device; when a kernel failed, tells the grader why and returns false.
bool device_work_finished(Channel& c, bool gpu) {
    const std::string problem = finish_device_work(gpu);
    if (!problem.empty()) fail(c, problem);
    return problem.empty();
}

}  // namespace

int serve(int fd, int lesson, const std::string& library) {
    Channel channel(fd);
    const LessonInfo* info = find_lesson(lesson);
    std::unique_ptr<Submission> submission;
    std::vector<Invoker> entries;
    {
        Writer hello;
        try {
            if (!info) throw std::runtime_error("unknown lesson " + std::to_string(lesson));
            submission = std::make_unique<Submission>(library, lesson);
            const RemoteLesson* remote = find_remote_lesson(lesson);
            if (remote) entries = remote->invokers(&submission->table<int>());
            if (entries.empty()) throw std::runtime_error("lesson " + std::to_string(lesson) + " cannot be graded remotely");
            hello.put<uint8_t>(1);
            hello.put_text("");
        } catch (const std::exception& e) {
            hello.clear();
            hello.put<uint8_t>(0);
            hello.put_text(e.what());
            channel.send(Kind::hello, hello.bytes());
            return 1;
        }
        channel.send(Kind::hello, hello.bytes());
    }
    const bool gpu = info->needs_gpu;
    HostState state;
    std::map<std::vector<unsigned char>, cudaGraphExec_t> graphs;  ///< a timed batch's calls -> its graph
    // Runs `count` calls read from `calls`; the first error an entry point returned, or 0.
    auto run_calls = [&](const std::vector<unsigned char>& calls, uint32_t count) -> int64_t {
        Reader each(calls);
        for (uint32_t i = 0; i < count; ++i) {
            const auto index = each.get<uint32_t>();
            if (index >= entries.size()) throw ChannelError("a call to an entry this lesson does not have");
            Writer out;
            entries[index](each, state, out);
            Reader result(out.bytes());
            if (const auto e = result.get<int64_t>()) return e;
        }
        return 0;
    };
    // The calls captured into one graph on this process's stream, made once and kept; nullptr where
    // they cannot be captured (they are then launched directly).
    auto graph_for = [&](const std::vector<unsigned char>& calls, uint32_t count) -> cudaGraphExec_t {
        auto cached = graphs.find(calls);
        if (cached != graphs.end()) return cached->second;
        cudaStream_t s = state.own_stream();
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess) {
            const int64_t e = run_calls(calls, count);
            const cudaError_t ended = cudaStreamEndCapture(s, &graph);
            if (e != 0 || ended != cudaSuccess || !graph || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
                exec = nullptr;
            if (graph) cudaGraphDestroy(graph);
        }
        cudaGetLastError();
        graphs.emplace(calls, exec);
        return exec;
    };
    for (;;) {
        Message m;
        try {
            m = channel.receive(-1);
        } catch (const ChannelError&) {
            return 0;  // the grader is done (or gone)
        }
        try {
            Reader r(m.body);
            remote_trace("host", std::string("message ") + kind_name(m.kind) + " received");
            switch (m.kind) {
                case Kind::share: {
                    const auto id = r.get<uint64_t>();
                    const auto size = r.get<uint64_t>();
                    const bool device = r.get<uint8_t>() != 0;
                    state.buffers.map(id, size, device, m.fd);
                    break;
                }
                case Kind::release:
                    // A graph may hold the buffer's addresses: every cached graph goes first.
                    for (auto& g : graphs)
                        if (g.second) cudaGraphExecDestroy(g.second);
                    graphs.clear();
                    state.buffers.unmap(r.get<uint64_t>());
                    break;
                case Kind::call: {
                    const auto index = r.get<uint32_t>();
                    if (index >= entries.size()) throw ChannelError("a call to an entry this lesson does not have");
                    Writer out;
                    entries[index](r, state, out);
                    if (!device_work_finished(channel, gpu)) return 1;
                    channel.send(Kind::reply, out.bytes());
                    break;
                }
                case Kind::batch: {
                    // Timed by the grader's wall clock: captured into one graph where the calls allow it
                    // (launches cost the CPU more than tiny kernels take), launched directly otherwise.
                    const auto count = r.get<uint32_t>();
                    const std::vector<unsigned char> calls(m.body.begin() + sizeof(uint32_t), m.body.end());
                    int64_t first_error = 0;
                    bool done_launching = false;
                    if (gpu) {
                        cudaGraphExec_t exec = graph_for(calls, count);
                        if (exec && cudaGraphLaunch(exec, state.own_stream()) == cudaSuccess) done_launching = true;
                        cudaGetLastError();
                        if (!device_work_finished(channel, gpu)) return 1;
                    }
                    if (!done_launching) first_error = run_calls(calls, count);
                    if (!device_work_finished(channel, gpu)) return 1;
                    Writer out;
                    out.put(first_error);
                    channel.send(Kind::reply, out.bytes());
                    break;
                }
                case Kind::timed_batch: {
                    // Timed by the grader's events (remote_student.cu): each group of calls queued behind
                    // a wait for its go word and followed by a write of its done word.
                    const auto count = r.get<uint32_t>();
                    const auto id = r.get<uint64_t>();
                    const auto go_at = r.get<uint64_t>(), done_at = r.get<uint64_t>();
                    const auto n0 = r.get<uint32_t>();
                    const auto groups = r.get<uint32_t>();
                    std::vector<std::pair<uint32_t, uint32_t>> ends(groups);
                    for (auto& e : ends) e = {r.get<uint32_t>(), r.get<uint32_t>()};
                    const size_t header = 2 * sizeof(uint32_t) + 3 * sizeof(uint64_t) + sizeof(uint32_t) +
                                          groups * 2 * sizeof(uint32_t);
                    if (header > m.body.size()) throw ChannelError("a message ended early");
                    const std::vector<unsigned char> all(m.body.begin() + header, m.body.end());
                    void* go = state.buffers.resolve(id, go_at);
                    void* done = state.buffers.resolve(id, done_at);
                    // Each group's calls, and its graph where they can be captured (made once: the same
                    // batch comes again for every sample).
                    std::vector<std::vector<unsigned char>> parts(groups);
                    std::vector<uint32_t> sizes(groups);
                    std::vector<cudaGraphExec_t> execs(groups, nullptr);
                    bool direct = false;
                    uint32_t calls_before = 0, bytes_before = 0;
                    for (uint32_t g = 0; g < groups; ++g) {
                        if (ends[g].first < calls_before || ends[g].second < bytes_before || ends[g].second > all.size() ||
                            ends[g].first > count)
                            throw ChannelError("a timed batch with groups that do not fit its calls");
                        parts[g].assign(all.begin() + bytes_before, all.begin() + ends[g].second);
                        sizes[g] = ends[g].first - calls_before;
                        if (sizes[g] && gpu) execs[g] = graph_for(parts[g], sizes[g]);
                        remote_trace("host", "timed_batch group " + std::to_string(g) + ": " + std::to_string(sizes[g]) +
                                                 " call(s), " + (execs[g] ? "a graph" : "launched directly"));
                        direct = direct || (sizes[g] && !execs[g]);
                        calls_before = ends[g].first;
                        bytes_before = ends[g].second;
                    }
                    cudaStream_t s = state.own_stream();
                    const StreamGate& gate = StreamGate::get();
                    Writer queued;
                    queued.put<int64_t>(0);
                    // Launched one by one, calls may wait for their stream: the grader is told first, so
                    // its go can come; the clock then holds those launches' costs.
                    remote_trace("host", "timed_batch calls=" + std::to_string(count) + " groups=" +
                                             std::to_string(groups) + " go/done from " + std::to_string(n0) +
                                             (direct ? "; 'queued' sent before launching" : ""));
                    if (direct) channel.send(Kind::reply, queued.bytes());
                    int64_t first_error = 0;
                    for (uint32_t g = 0; g < groups; ++g) {
                        gate.wait(s, go, n0 + g);
                        state.mark(2 * g, s);
                        bool launched = false;
                        if (execs[g] && cudaGraphLaunch(execs[g], s) == cudaSuccess) launched = true;
                        cudaGetLastError();
                        if (!launched && sizes[g]) {
                            const int64_t e = run_calls(parts[g], sizes[g]);
                            if (!first_error) first_error = e;
                        }
                        state.mark(2 * g + 1, s);
                        gate.write(s, done, n0 + g);  // whatever was launched: the grader's stream waits for it
                        remote_trace("host", "group " + std::to_string(g) + " queued: wait go>=" + std::to_string(n0 + g) +
                                                 ", write done=" + std::to_string(n0 + g));
                    }
                    if (!direct) channel.send(Kind::reply, queued.bytes());
                    remote_trace("host", "'queued' sent");
                    if (!device_work_finished(channel, gpu)) return 1;
                    Writer out;
                    out.put(first_error);
                    out.put<double>(state.marked_seconds(groups) * 1e3);
                    channel.send(Kind::reply, out.bytes());
                    remote_trace("host", "'finished' sent");
                    break;
                }
                default: throw ChannelError("a message this process does not know");
            }
        } catch (const std::exception& e) {
            try {
                fail(channel, std::string("could not run the call: ") + e.what());
            } catch (const ChannelError&) {
            }
            return 1;
        }
    }
}

}  // namespace workbook::remote
