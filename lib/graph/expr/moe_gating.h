// Expression operators for sparsely-gated MoE routing (graph nodes over lib/ops/moe_gating.h):
//   gate_noise(clean, sigma, seed, stream) = clean + eps * sigma (eps ~ N(0,1) from Philox);
//   prob_in_top_k(clean, noisy, sigma, top) = Phi((clean - tau) / sigma), the smooth load estimator;
//   route_index(outer, divisor, inner, inner_size) = (outer / divisor) * inner_size + inner (i32);
//   iota_index(g, n, divisor)[r] = r / divisor (i32);
//   threshold_mask(x, thresholds, experts) = [x > thresholds[expert]] (no gradient);
//   stop_gradient(x) = x, passing no gradient back.
// Covered by tests/ops/moe_gating_test.cpp and tests/gpu/moe_gating_parity_test.cpp.
#pragma once
#include <cstdint>

#include "graph/graph.h"

namespace moe {

Expr gate_noise(const Expr& clean, const Expr& sigma, uint64_t seed, uint64_t stream);
/// top: the k+1 largest noisy values of each row, descending (topk(noisy, k+1).values).
Expr prob_in_top_k(const Expr& clean, const Expr& noisy, const Expr& sigma, const Expr& top);
/// i32, no gradient; inner undefined gives outer / divisor * inner_size with outer's shape.
Expr route_index(const Expr& outer, int64_t divisor, const Expr& inner = {}, int64_t inner_size = 1);
/// x's dtype and shape, no gradient; experts undefined means expert = column.
Expr threshold_mask(const Expr& x, const Expr& thresholds, const Expr& experts = {});
/// i32 [n] with out[r] = r / divisor (no gradient).
Expr iota_index(Graph& g, int64_t n, int64_t divisor = 1);
/// The value of x (shared, no copy) as a node that takes no gradient.
Expr stop_gradient(const Expr& x);

}  // namespace moe
