/// @file remote.cu
/// @brief Lesson 7 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/07-pdl/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
namespace {

template <int S>
const void* proxy_table() { return typed_proxy_table<S, api::Lesson7>(); }

std::vector<Invoker> invokers(const void* table) { return typed_invokers(*static_cast<const api::Lesson7*>(table)); }

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(7, workbook::remote::proxy_table, workbook::remote::invokers)
