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
#include "remote/stream_gate.h"
#include "engine/submission.h"

namespace workbook::remote {
namespace {

/// Waits for every kernel the calls started, on any stream; "" or what went wrong.
std::string finish_device_work(bool gpu) {
    if (!gpu) return "";
    const cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) return "";
    cudaGetLastError();
    return std::string("its kernel failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void fail(Channel& c, const std::string& why) {
    Writer w;
    w.put_text(why);
    c.send(Kind::failure, w.bytes());
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
    for (;;) {
        Message m;
        try {
            m = channel.receive(-1);
        } catch (const ChannelError&) {
            return 0;  // the grader is done (or gone)
        }
        try {
            Reader r(m.body);
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
                    const std::string problem = finish_device_work(gpu);
                    if (!problem.empty()) {
                        fail(channel, problem);
                        return 1;
                    }
                    channel.send(Kind::reply, out.bytes());
                    break;
                }
                case Kind::batch:
                case Kind::timed_batch: {
                    // A timed batch: captured into one graph where the calls allow it (launches cost the
                    // CPU more than tiny kernels take), launched directly otherwise. `batch` is timed by
                    // the grader's wall clock; `timed_batch` by the grader's events, this stream held
                    // behind the grader's go and signalling done after the last call (remote_student.cu).
                    const auto count = r.get<uint32_t>();
                    const bool gated = m.kind == Kind::timed_batch;
                    void* go = nullptr;
                    void* done = nullptr;
                    uint32_t n = 0;
                    size_t header = sizeof(uint32_t);
                    if (gated) {
                        const auto id = r.get<uint64_t>();
                        const auto go_at = r.get<uint64_t>(), done_at = r.get<uint64_t>();
                        n = r.get<uint32_t>();
                        go = state.buffers.resolve(id, go_at);
                        done = state.buffers.resolve(id, done_at);
                        header += 3 * sizeof(uint64_t) + sizeof(uint32_t);
                    }
                    const std::vector<unsigned char> calls(m.body.begin() + header, m.body.end());
                    auto run_all = [&]() -> int64_t {
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
                    int64_t first_error = 0;
                    bool done_launching = false;
                    cudaGraphExec_t exec = nullptr;
                    if (gpu) {
                        // The same batch comes again for every sample: its graph is made once.
                        cudaStream_t s = state.own_stream();
                        auto cached = graphs.find(calls);
                        if (cached == graphs.end()) {
                            cudaGraph_t graph = nullptr;
                            if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess) {
                                const int64_t e = run_all();
                                const cudaError_t ended = cudaStreamEndCapture(s, &graph);
                                if (e != 0 || ended != cudaSuccess || !graph || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
                                    exec = nullptr;
                                if (graph) cudaGraphDestroy(graph);
                            }
                            cudaGetLastError();
                            cached = graphs.emplace(calls, exec).first;  // nullptr: launch directly
                        }
                        exec = cached->second;
                    }
                    if (gated) {
                        cudaStream_t s = state.own_stream();
                        const StreamGate& gate = StreamGate::get();
                        gate.wait(s, go, n);
                        state.mark(0, s);
                        if (exec && cudaGraphLaunch(exec, s) == cudaSuccess) done_launching = true;
                        cudaGetLastError();
                        Writer queued;
                        queued.put<int64_t>(0);
                        if (!done_launching) {
                            // Launched one by one, the calls may wait for their stream: the grader is
                            // told first, so its go can arrive; the clock then holds their launch costs.
                            channel.send(Kind::reply, queued.bytes());
                            first_error = run_all();
                        }
                        state.mark(1, s);
                        gate.write(s, done, n);  // whatever was launched: the grader's stream waits for it
                        if (done_launching) channel.send(Kind::reply, queued.bytes());
                        const std::string problem = finish_device_work(gpu);
                        if (!problem.empty()) {
                            fail(channel, problem);
                            return 1;
                        }
                        Writer out;
                        out.put(first_error);
                        out.put<double>(state.marked_seconds() * 1e3);
                        channel.send(Kind::reply, out.bytes());
                        break;
                    }
                    if (exec) {
                        if (cudaGraphLaunch(exec, state.own_stream()) == cudaSuccess) done_launching = true;
                        cudaGetLastError();
                        const std::string problem = finish_device_work(gpu);
                        if (!problem.empty()) {
                            fail(channel, problem);
                            return 1;
                        }
                    }
                    if (!done_launching) first_error = run_all();
                    const std::string problem = finish_device_work(gpu);
                    if (!problem.empty()) {
                        fail(channel, problem);
                        return 1;
                    }
                    Writer out;
                    out.put(first_error);
                    channel.send(Kind::reply, out.bytes());
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
