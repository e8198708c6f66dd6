/// @file remote.cu
/// @brief Lesson 11 graded remotely (the leaderboard, `--remote`): its proxy table and invokers.
#include "lessons/11-fp8-quant/api.h"
#include "remote/proxy.h"
#include "remote/remote_registry.h"

namespace workbook::remote {
namespace {

template <int S>
const void* proxy_table() { return typed_proxy_table<S, api::Lesson11>(); }

std::vector<Invoker> invokers(const void* table) { return typed_invokers(*static_cast<const api::Lesson11*>(table)); }

}  // namespace
}  // namespace workbook::remote

WORKBOOK_REGISTER_REMOTE(11, workbook::remote::proxy_table, workbook::remote::invokers)
