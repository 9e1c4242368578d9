// Token capacity for routers where tokens pick experts (GShard, Lepikhin et al. 2020, §2.2; Switch
// Transformer, Fedus et al. 2022, §2.2; docs/MODELS.md §3.13): each expert takes at most
//   C = max(1, ceil(f * rows * k / n))
// of the call's (token, slot) assignments, f the capacity factor, k the slots per token, n the experts.
// An expert's assignments are taken in assignment order, which is token order (rows flattened in order,
// a token's slots by rank): earlier tokens first, so a token is never dropped because of a later position
// of its own row (RoutingScope::earlier). An assignment past C is dropped: it contributes nothing, and a
// token whose every assignment is dropped gets an MoE output of 0 (the residual passes it on).
// As GShard's einsum dispatch, the experts run on fixed buffers of C rows each, n C rows in all (empty
// slots are zero rows), so the expert FLOPs are those of the capacity (f k / 1 times a token's), with
// static shapes: the slot of each kept assignment is computed with graph ops alone (sort_by_key, its
// segment offsets, index_select, casts and ReLUs for the integer arithmetic), no host synchronisation;
// expert parallelism sends each rank its experts' buffers. Covered by tests/layers/moe_capacity_test.cpp
// (slots, drops and combine weights against a direct computation; gradients; capacity respected) and
// tests/gpu/moe_routers_parity_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/moe_ffn_dispatch.h"

namespace moe {

namespace dist {
class Communicator;
}

/// C = max(1, ceil(factor * rows * per_token / experts)).
int64_t token_capacity(double factor, int64_t rows, int64_t per_token, int64_t experts);

/// What capacity C keeps of assignments to `experts` experts (host; assignment order irrelevant for
/// the counts): pairs, dropped = sum_e max(0, count_e - C), kept = pairs - dropped, slots = experts * C.
struct CapacityCount {
  int64_t pairs = 0, dropped = 0, kept = 0, slots = 0;
};
CapacityCount count_capacity(const std::vector<int32_t>& expert, int64_t experts, int64_t capacity);

/// y [N, d] = sum over the assignments kept by the capacity of weight[a] * Expert_{expert[a]}(x[token[a]]),
/// `experts` experts in all (this rank's `local` weights, expert-parallel when `comm` is given).
Expr moe_dispatch_capacity(const Expr& x, const Routing& routing, int64_t experts, int64_t capacity,
                           const ExpertWeights& local, bool autoscale, dist::Communicator* comm);

}  // namespace moe
