/// @file remote.cu
/// @brief Lesson 10 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/10-rmsnorm-backward/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
namespace {

template <int S>
const void* proxy_table() {
    using api::Lesson10;
    static const Lesson10 t{api::kVersion,
                            Proxy<S, 0, decltype(Lesson10::f32)>::fn,
                            Proxy<S, 1, decltype(Lesson10::f16)>::fn,
                            Proxy<S, 2, decltype(Lesson10::bf16)>::fn,
                            Proxy<S, 3, decltype(Lesson10::workspace_f32)>::fn,
                            Proxy<S, 4, decltype(Lesson10::workspace_f16)>::fn,
                            Proxy<S, 5, decltype(Lesson10::workspace_bf16)>::fn};
    return &t;
}

/// The three backward entries, then the three workspace queries.
std::vector<Invoker> invokers(const void* table) {
    const auto& t = *static_cast<const api::Lesson10*>(table);
    std::vector<Invoker> all = typed_invokers(t);
    for (auto f : {t.workspace_f32, t.workspace_f16, t.workspace_bf16}) all.push_back(make_invoker(f));
    return all;
}

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(10, workbook::remote::proxy_table, workbook::remote::invokers)
