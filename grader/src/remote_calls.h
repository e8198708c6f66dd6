/// @file remote_calls.h
/// @brief How an entry-point call crosses from the grader to the submission's process and back:
///        each argument's encoding (pointers become (buffer, offset) in shared memory, the stream
///        becomes the other process's own), and each lesson's table, entry by entry.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

#include "remote_channel.h"
#include "shared_buffers.h"
#include "workbook/cuda_check.h"
#include "workbook/lesson_api.h"

namespace workbook::remote {

/// What the submission's process keeps between calls.
struct HostState {
    MappedBuffers buffers;
    cudaStream_t stream = nullptr;  ///< its own non-blocking stream, made on first use
    std::map<uintptr_t, lesson9::NormDescriptor*> descriptors;  ///< handle the grader holds -> real pointer
    uintptr_t next_handle = 0x10000;

    cudaStream_t own_stream() {
        if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        return stream;
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

/// Lesson 9's problem: its data pointers translated.
template <>
struct Arg<const lesson9::NormProblem&> {
    using Held = lesson9::NormProblem;
    static lesson9::TensorDesc* tensors(lesson9::NormProblem& p, int i) {
        lesson9::TensorDesc* all[] = {&p.x, &p.residual, &p.weight, &p.bias, &p.y, &p.residual_out, &p.rstd};
        return all[i];
    }
    static void encode(Writer& w, const lesson9::NormProblem& p) {
        lesson9::NormProblem copy = p;
        for (int i = 0; i < 7; ++i) tensors(copy, i)->data = nullptr;
        w.put(copy);
        for (int i = 0; i < 7; ++i) encode_pointer(w, tensors(const_cast<lesson9::NormProblem&>(p), i)->data);
    }
    static void after(Reader&, const lesson9::NormProblem&) {}
    static Held decode(Reader& r, HostState& s) {
        Held p = r.get<lesson9::NormProblem>();
        for (int i = 0; i < 7; ++i) tensors(p, i)->data = decode_pointer(r, s);
        return p;
    }
    static const lesson9::NormProblem& get(Held& h) { return h; }
    static void write_back(Writer&, Held&, HostState&) {}
};

/// A descriptor as the grader holds it: a handle the other process maps to its real pointer.
inline lesson9::NormDescriptor* descriptor_of(HostState& s, uintptr_t handle) {
    auto it = s.descriptors.find(handle);
    return it == s.descriptors.end() ? reinterpret_cast<lesson9::NormDescriptor*>(handle) : it->second;
}

template <>
struct Arg<const lesson9::NormDescriptor*> {
    using Held = uintptr_t;
    static void encode(Writer& w, const lesson9::NormDescriptor* d) { w.put<uint64_t>(reinterpret_cast<uintptr_t>(d)); }
    static void after(Reader&, const lesson9::NormDescriptor*) {}
    static Held decode(Reader& r, HostState& s) { return reinterpret_cast<uintptr_t>(descriptor_of(s, r.get<uint64_t>())); }
    static const lesson9::NormDescriptor* get(Held h) { return reinterpret_cast<const lesson9::NormDescriptor*>(h); }
    static void write_back(Writer&, Held&, HostState&) {}
};

/// norm_destroy's argument: the handle is forgotten once destroyed.
template <>
struct Arg<lesson9::NormDescriptor*> {
    struct Held {
        uintptr_t handle;
        lesson9::NormDescriptor* real;
    };
    static void encode(Writer& w, lesson9::NormDescriptor* d) { w.put<uint64_t>(reinterpret_cast<uintptr_t>(d)); }
    static void after(Reader&, lesson9::NormDescriptor*) {}
    static Held decode(Reader& r, HostState& s) {
        const uintptr_t h = r.get<uint64_t>();
        return {h, descriptor_of(s, h)};
    }
    static lesson9::NormDescriptor* get(Held& h) { return h.real; }
    static void write_back(Writer&, Held& h, HostState& s) { s.descriptors.erase(h.handle); }
};

/// norm_create's out parameter: null stays null; the sentinel the grader put there is kept when
/// the call leaves it alone; a new descriptor comes back as a handle.
template <>
struct Arg<lesson9::NormDescriptor**> {
    struct Held {
        bool given;
        lesson9::NormDescriptor* value;
        uintptr_t before;
    };
    static void encode(Writer& w, lesson9::NormDescriptor** out) {
        w.put<uint8_t>(out != nullptr);
        w.put<uint64_t>(out ? reinterpret_cast<uintptr_t>(*out) : 0);
    }
    static void after(Reader& r, lesson9::NormDescriptor** out) {
        const uint64_t v = r.get<uint64_t>();
        if (out) *out = reinterpret_cast<lesson9::NormDescriptor*>(static_cast<uintptr_t>(v));
    }
    static Held decode(Reader& r, HostState&) {
        const bool given = r.get<uint8_t>() != 0;
        const uintptr_t before = r.get<uint64_t>();
        return {given, reinterpret_cast<lesson9::NormDescriptor*>(before), before};
    }
    static lesson9::NormDescriptor** get(Held& h) { return h.given ? &h.value : nullptr; }
    static void write_back(Writer& w, Held& h, HostState& s) {
        const auto v = reinterpret_cast<uintptr_t>(h.value);
        if (!h.given || v == 0 || v == h.before) {
            w.put<uint64_t>(h.given ? v : 0);
            return;
        }
        const uintptr_t handle = s.next_handle;
        s.next_handle += 16;
        s.descriptors[handle] = h.value;
        w.put<uint64_t>(handle);
    }
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

/// Every entry of lesson `lesson`'s table, in a fixed order both sides agree on.
inline std::vector<Invoker> invokers_for(int lesson, const void* table) {
    using namespace api;
    auto typed = [](const auto& t) { return std::vector<Invoker>{make_invoker(t.f32), make_invoker(t.f16), make_invoker(t.bf16)}; };
    switch (lesson) {
        case 1: return {make_invoker(static_cast<const Lesson1*>(table)->rmsnorm)};
        case 2:
        case 3: return {make_invoker(static_cast<const Lesson2*>(table)->rmsnorm)};
        case 4:
        case 8: return typed(*static_cast<const Lesson4*>(table));
        case 5: return typed(*static_cast<const Lesson5*>(table));
        case 6: return typed(*static_cast<const Lesson6*>(table));
        case 7: return typed(*static_cast<const Lesson7*>(table));
        case 11: return typed(*static_cast<const Lesson11*>(table));
        case 9: {
            const auto& t = *static_cast<const Lesson9*>(table);
            return {make_invoker(t.create), make_invoker(t.launch), make_invoker(t.destroy)};
        }
        case 10: {
            const auto& t = *static_cast<const Lesson10*>(table);
            std::vector<Invoker> all = typed(t);
            for (auto f : {t.workspace_f32, t.workspace_f16, t.workspace_bf16}) all.push_back(make_invoker(f));
            return all;
        }
        default: return {};
    }
}

}  // namespace workbook::remote
