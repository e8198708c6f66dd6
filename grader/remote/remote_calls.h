/// @file remote_calls.h
/// @brief How an entry-point call crosses from the grader to the submission's process and back:
///        each argument's encoding (pointers become (buffer, offset) in shared memory, the stream
///        becomes the other process's own), and the submission side's invokers.
///        Each lesson's own tables (and any codec of its own) are in grader/lessons/NN-slug/remote.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

#include "remote/remote_channel.h"
#include "remote/shared_buffers.h"
#include "workbook/cuda_check.h"
#include "workbook/lesson_api.h"

namespace workbook::remote {

/// What the submission's process keeps between calls.
struct HostState {
    MappedBuffers buffers;
    cudaStream_t stream = nullptr;  ///< its own non-blocking stream, made on first use
    std::map<uintptr_t, void*> handles;  ///< an opaque object (lesson 9's descriptor): handle the grader holds -> real pointer
    uintptr_t next_handle = 0x10000;

    cudaStream_t own_stream() {
        if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        return stream;
    }

    /// Events around each group of a timed batch's launches in this process: shown as a diagnostic,
    /// never trusted.
    std::vector<cudaEvent_t> marks;
    void mark(size_t i, cudaStream_t s) {
        while (marks.size() <= i) {
            marks.emplace_back();
            cudaEventCreate(&marks.back());
        }
        cudaEventRecord(marks[i], s);
    }
    /// Seconds inside the marks of `groups` groups, once they are done (0 when they cannot be read).
    double marked_seconds(size_t groups) {
        double total = 0;
        for (size_t g = 0; g < groups && 2 * g + 1 < marks.size(); ++g) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, marks[2 * g], marks[2 * g + 1]) != cudaSuccess) {
                cudaGetLastError();
                return 0;
            }
            total += ms * 1e-3;
        }
        return total;
    }
};

/// How a pointer travels.
enum class PointerTag : uint8_t { null = 0, shared = 1, raw = 2 };

inline void encode_pointer(Writer& w, const void* p) {
    uint64_t id = 0, offset = 0;
    if (!p) {
        w.put(PointerTag::null);
    } else if (SharedBuffers::instance().locate(p, id, offset)) {
        w.put(PointerTag::shared);
        w.put(id);
        w.put(offset);
    } else {  // an address the grader made up (lesson 9's validation cases): passed as it is
        w.put(PointerTag::raw);
        w.put<uint64_t>(reinterpret_cast<uintptr_t>(p));
    }
}

inline void* decode_pointer(Reader& r, const HostState& s) {
    const auto tag = r.get<PointerTag>();
    if (tag == PointerTag::null) return nullptr;
    const uint64_t a = r.get<uint64_t>();
    if (tag == PointerTag::raw) return reinterpret_cast<void*>(static_cast<uintptr_t>(a));
    return s.buffers.resolve(a, r.get<uint64_t>());
}

/// One argument type's codec. Grader side: encode, then `after` reads what the call wrote back.
/// Submission side: decode into a Held value, `get` the argument, `write_back` after the call.
template <typename T>
struct Arg {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "an entry-point argument with no codec");
    using Held = T;
    static void encode(Writer& w, T v) { w.put(v); }
    static void after(Reader&, T) {}
    static Held decode(Reader& r, HostState&) { return r.get<T>(); }
    static T get(Held& h) { return h; }
    static void write_back(Writer&, Held&, HostState&) {}
};

template <typename T>
struct Arg<T*> {
    using Held = T*;
    static void encode(Writer& w, T* p) { encode_pointer(w, p); }
    static void after(Reader&, T*) {}
    static Held decode(Reader& r, HostState& s) { return static_cast<T*>(decode_pointer(r, s)); }
    static T* get(Held h) { return h; }
    static void write_back(Writer&, Held&, HostState&) {}
};

/// The stream: the grader's work on it (filling the inputs) is finished before the call leaves;
/// the other process launches on its own stream and waits for its whole device before answering.
template <>
struct Arg<cudaStream_t> {
    using Held = cudaStream_t;
    static void encode(Writer&, cudaStream_t s) { WB_CUDA_CHECK(cudaStreamSynchronize(s)); }
    static void after(Reader&, cudaStream_t) {}
    static Held decode(Reader&, HostState& s) { return s.own_stream(); }
    static cudaStream_t get(Held h) { return h; }
    static void write_back(Writer&, Held&, HostState&) {}
};

/// Submission side: runs one call read from `r`, writes its result and out parameters to `out`.
using Invoker = std::function<void(Reader& r, HostState& s, Writer& out)>;

template <typename R, typename... A>
Invoker make_invoker(R (*f)(A...)) {
    return [f](Reader& r, HostState& s, Writer& out) {
        std::tuple<typename Arg<A>::Held...> held{Arg<A>::decode(r, s)...};  // braces: read left to right
        int64_t result = 0;
        std::apply(
            [&](auto&... h) {
                if constexpr (std::is_void_v<R>) f(Arg<A>::get(h)...);
                else result = static_cast<int64_t>(f(Arg<A>::get(h)...));
            },
            held);
        out.put(result);
        std::apply([&](auto&... h) { (Arg<A>::write_back(out, h, s), ...); }, held);
    };
}

/// Every entry of a table whose entries are f32, f16, bf16, in that order.
template <typename Table>
std::vector<Invoker> typed_invokers(const Table& t) {
    return {make_invoker(t.f32), make_invoker(t.f16), make_invoker(t.bf16)};
}

}  // namespace workbook::remote
