/// @file remote.cu
/// @brief Lesson 2 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/02-one-warp/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
namespace {

template <int S>
const void* proxy_table() { return single_proxy_table<S, api::Lesson2>(); }

std::vector<Invoker> invokers(const void* table) {
    return {make_invoker(static_cast<const api::Lesson2*>(table)->rmsnorm)};
}

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(2, workbook::remote::proxy_table, workbook::remote::invokers)
