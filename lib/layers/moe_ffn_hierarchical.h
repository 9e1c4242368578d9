// Hierarchical MoE gate (docs/MODELS.md §3.8): a groups of b experts; a primary noisy top-k over the
// groups, then, on the rows dispatched to each group (sorted by group, one grouped GEMM for all
// groups' gate logits), a secondary noisy top-k over the group's b experts. The combined gate
// G_p(x)_i G_i(x)_j routes to expert i*b+j. Losses over the a x b matrices:
//   Importance_H[i,j] = sum_{x in X(i)} G_p(x)_i G_i(x)_j,
//   Load_H[i,j] = Load_p(X)_i Load_i(X(i))_j / (|X(i)| + 1e-10)   (|X(i)|: true primary count).
// Covered by tests/layers/moe_ffn_test.cpp (equals the two-level definition; gradients).
#pragma once
#include "layers/moe_ffn_gating.h"

namespace moe {

struct HierarchicalGate {
  Routing routing;  // expert ids in [0, a*b)
  Expr importance;  // [a*b]
  Expr load;        // [a*b] (undefined unless want_losses)
};

/// x [N, d] (gate dtype); primary w_gate, w_noise [d, a]; secondary w_gate2, w_noise2 [a, d, b]
/// (the noise weights may be undefined when the noise is off).
HierarchicalGate hierarchical_gate(const Expr& x, const Expr& w_gate, const Expr& w_noise, const Expr& w_gate2,
                                   const Expr& w_noise2, int k_primary, int k_secondary, const GateNoise& noise_primary,
                                   const GateNoise& noise_secondary, float noise_epsilon, bool want_losses);

}  // namespace moe
