/// @file warp_collectives.cpp
/// @brief Warp operations (__syncwarp, shuffles, votes, __match_any_sync): the lanes of a mask meet.
#include <string>
#include <vector>

#include "internal.h"
#include "scheduler_parts.h"
#include "scheduler_state.h"

namespace emu {

namespace {

/// Computes every participant's result once the last lane of `g` has arrived.
void complete_group(UnitState& u, BlockState& b, int warp, WarpGroup& g) {
    const int base_thread = warp * 32;
    for (int lane = 0; lane < 32; ++lane) {
        if (!(g.mask & (1u << lane))) continue;
        ThreadState& t = *b.threads[base_thread + lane];
        uint64_t r = 0;
        const int width = g.width[lane];
        const int seg = lane & ~(width - 1);
        int src = lane;
        switch (g.op) {
            case WarpOp::sync: break;
            case WarpOp::shfl_idx: src = seg + (g.param[lane] & (width - 1)); break;
            case WarpOp::shfl_up: src = lane - g.param[lane] < seg ? lane : lane - g.param[lane]; break;
            case WarpOp::shfl_down: src = lane + g.param[lane] >= seg + width ? lane : lane + g.param[lane]; break;
            case WarpOp::shfl_xor: {
                const int x = lane ^ g.param[lane];
                src = (x < seg || x >= seg + width) ? lane : x;
                break;
            }
            case WarpOp::ballot:
            case WarpOp::any:
            case WarpOp::all: {
                unsigned votes = 0;
                for (int l = 0; l < 32; ++l)
                    if ((g.mask & (1u << l)) && g.value[l]) votes |= 1u << l;
                r = g.op == WarpOp::ballot ? votes : g.op == WarpOp::any ? votes != 0 : votes == g.mask;
                break;
            }
            case WarpOp::match_any: {
                unsigned same = 0;
                for (int l = 0; l < 32; ++l)
                    if ((g.mask & (1u << l)) && g.value[l] == g.value[lane]) same |= 1u << l;
                r = same;
                break;
            }
            case WarpOp::activemask: break;
        }
        if (g.op >= WarpOp::shfl_idx && g.op <= WarpOp::shfl_xor) {
            if (src != lane && !(g.mask & (1u << src))) {
                raise_fault(cudaErrorEmulatorWarpSync,
                            std::string(op_name(g.op)) + " in warp " + std::to_string(warp) + ": lane " +
                                std::to_string(lane) + " reads lane " + std::to_string(src) +
                                ", which is not in the mask " + hex(g.mask) + at_line(g.pc) +
                                " (the value is undefined on the GPU)");
            }
            r = g.value[src];
        }
        t.warp_result = r;
        if (t.state == ThreadState::at_warp_op) t.state = ThreadState::ready;
    }
}

}  // namespace

uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int param, int width) {
    ThreadState& t = current_fiber(op_name(op));
    const void* pc = __builtin_extract_return_addr(__builtin_return_address(0));
    UnitState& u = *tls_unit;
    BlockState& b = u.blocks[t.rank];
    const unsigned me = 1u << t.lane;
    if (op == WarpOp::activemask) return b.warps[t.warp].live_lanes;
    if (width < 1 || width > 32 || (width & (width - 1)))
        raise_fault(cudaErrorEmulatorWarpSync, std::string(op_name(op)) + " with width " + std::to_string(width) +
                                                   ": the width must be a power of two from 1 to 32" + at_line(pc));
    if (!(mask & me))
        raise_fault(cudaErrorEmulatorWarpSync, std::string(op_name(op)) + " in warp " + std::to_string(t.warp) +
                                                   ": lane " + std::to_string(t.lane) + " calls it with the mask " +
                                                   hex(mask) + ", which does not name the lane itself" + at_line(pc));
    // Lanes past the end of a partial last warp do not exist; they are not waited for.
    mask &= b.warps[t.warp].existing_lanes;
    WarpState& w = b.warps[t.warp];
    WarpGroup* g = nullptr;
    for (WarpGroup& c : w.groups)
        if (c.mask == mask && !(c.arrived & me)) {
            g = &c;
            break;
        }
    if (!g) {
        w.groups.emplace_back();
        g = &w.groups.back();
        g->mask = mask;
        g->op = op;
        g->pc = pc;
    }
    if (g->op != op)
        raise_fault(cudaErrorEmulatorWarpSync,
                    "warp " + std::to_string(t.warp) + " diverged: lanes of mask " + hex(mask) + " meet at " +
                        op_name(g->op) + at_line(g->pc) + " and at " + op_name(op) + at_line(pc) +
                        "; every lane named in the mask must execute the same warp operation");
    g->arrived |= me;
    g->value[t.lane] = value;
    g->param[t.lane] = param;
    g->width[t.lane] = width;
    t.wait_pc = pc;
    if (g->arrived == g->mask) {
        complete_group(u, b, t.warp, *g);
        w.groups.erase(w.groups.begin() + (g - w.groups.data()));
        return t.warp_result;
    }
    t.state = ThreadState::at_warp_op;
    t.wait_mask = mask;
    t.wait_op = op;
    yield_to_scheduler(t);
    return t.warp_result;
}

}  // namespace emu
