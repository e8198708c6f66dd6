/// @file remote.cu
/// @brief Lesson 9 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/09-production-norm/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
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
    auto it = s.handles.find(handle);
    return it == s.handles.end() ? reinterpret_cast<lesson9::NormDescriptor*>(handle)
                                 : static_cast<lesson9::NormDescriptor*>(it->second);
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
    static void write_back(Writer&, Held& h, HostState& s) { s.handles.erase(h.handle); }
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
        s.handles[handle] = h.value;
        w.put<uint64_t>(handle);
    }
};

namespace {

template <int S>
const void* proxy_table() {
    using api::Lesson9;
    static const Lesson9 t{api::kVersion, Proxy<S, 0, decltype(Lesson9::create)>::fn,
                           Proxy<S, 1, decltype(Lesson9::launch)>::fn, Proxy<S, 2, decltype(Lesson9::destroy)>::fn};
    return &t;
}

std::vector<Invoker> invokers(const void* table) {
    const auto& t = *static_cast<const api::Lesson9*>(table);
    return {make_invoker(t.create), make_invoker(t.launch), make_invoker(t.destroy)};
}

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(9, workbook::remote::proxy_table, workbook::remote::invokers)
