/// @file remote.cu
/// @brief Lesson 1 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/01-cpu-reference/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
namespace {

template <int S>
const void* proxy_table() { return single_proxy_table<S, api::Lesson1>(); }

std::vector<Invoker> invokers(const void* table) {
    return {make_invoker(static_cast<const api::Lesson1*>(table)->rmsnorm)};
}

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(1, workbook::remote::proxy_table, workbook::remote::invokers)
