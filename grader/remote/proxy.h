/// @file proxy.h
/// @brief Grader side of remote grading: an entry point that sends its call to the submission's process.
///        A lesson builds its proxy table from these in its own grader/lessons/NN-slug/remote.cu.
#pragma once

#include <cstdint>
#include <type_traits>

#include "remote/remote_calls.h"

namespace workbook::remote {

namespace detail {
/// Queues the call when that side is batching timed launches; true when it did.
bool queue_call(int side, const Writer& w);
/// Sends the call to that side's process and waits for its reply (a lost process ends the run).
Message send_call(int side, const Writer& w);
}  // namespace detail

/// Entry `Index` of side `S`'s table: encodes the arguments, sends them, decodes what came back.
template <int S, int Index, typename F>
struct Proxy;

template <int S, int Index, typename R, typename... A>
struct Proxy<S, Index, R (*)(A...)> {
    static R fn(A... a) {
        Writer w;
        w.put<uint32_t>(Index);
        (Arg<A>::encode(w, a), ...);
        if (detail::queue_call(S, w)) {
            if constexpr (!std::is_void_v<R>) return R{};
            else return;
        }
        const Message m = detail::send_call(S, w);
        Reader r(m.body);
        const auto result = r.get<int64_t>();
        (Arg<A>::after(r, a), ...);
        if constexpr (!std::is_void_v<R>) return static_cast<R>(result);
    }
};

/// The proxy table of a table whose entries are f32, f16, bf16, in that order.
template <int S, typename Table>
const void* typed_proxy_table() {
    static const Table t{api::kVersion, Proxy<S, 0, decltype(Table::f32)>::fn, Proxy<S, 1, decltype(Table::f16)>::fn,
                         Proxy<S, 2, decltype(Table::bf16)>::fn};
    return &t;
}

/// The proxy table of a table with one entry, `rmsnorm`.
template <int S, typename Table>
const void* single_proxy_table() {
    static const Table t{api::kVersion, Proxy<S, 0, decltype(Table::rmsnorm)>::fn};
    return &t;
}

}  // namespace workbook::remote
