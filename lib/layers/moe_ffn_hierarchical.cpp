// moe_ffn_hierarchical.h implementation. Covered by tests/layers/moe_ffn_test.cpp.
#include "layers/moe_ffn_hierarchical.h"

#include "graph/expr/binary.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/grouped_gemm.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/sort.h"
#include "graph/expr/unary.h"

namespace moe {

HierarchicalGate hierarchical_gate(const Expr& x, const Expr& w_gate, const Expr& w_noise, const Expr& w_gate2,
                                   const Expr& w_noise2, int k_primary, int k_secondary, const GateNoise& noise_primary,
                                   const GateNoise& noise_secondary, float noise_epsilon, bool want_losses) {
  MOE_CHECK(w_gate.shape().ndim() == 2 && w_gate2.shape().ndim() == 3 && w_gate2.shape()[0] == w_gate.shape()[1] &&
                w_gate2.shape()[1] == w_gate.shape()[0],
            "hierarchical moe gate: primary gate ", w_gate.shape(), " must be [d, a] and secondary ", w_gate2.shape(),
            " [a, d, b]");
  const int a = static_cast<int>(w_gate.shape()[1]), b = static_cast<int>(w_gate2.shape()[2]);
  Graph& g = x.graph();
  // Primary gate over the groups.
  const TopKGate primary = noisy_top_k_gate(matmul(x, w_gate), noise_primary.enabled ? matmul(x, w_noise) : Expr(),
                                            k_primary, noise_primary, noise_epsilon, want_losses);
  const Routing pr = top_k_routing(primary);
  const SortedSegments by_group = sort_by_key(pr.expert, a);
  Expr token = route_index(by_group.perm, pr.per_token);          // [N*kp] token of each dispatched row
  Expr group = index_select(pr.expert, by_group.perm);            // [N*kp] its group
  Expr primary_gate = index_select(pr.weight, by_group.perm);     // [N*kp, 1]
  Expr xs = index_select(x, token);                               // X(i), rows sorted by group
  // Secondary gate of each group on its rows: one grouped GEMM for all groups.
  Expr clean2 = grouped_matmul(xs, w_gate2, by_group.offsets);
  Expr raw2 = noise_secondary.enabled ? grouped_matmul(xs, w_noise2, by_group.offsets) : Expr();
  const bool smooth2 = noise_secondary.enabled && k_secondary < b;
  const TopKGate secondary =
      noisy_top_k_gate(clean2, raw2, k_secondary, noise_secondary, noise_epsilon, want_losses && smooth2);

  HierarchicalGate out;
  Expr combined = secondary.gates * primary_gate;                  // [N*kp, ks]
  Expr expert = route_index(group, 1, secondary.indices, b);       // [N*kp, ks] global ids i*b+j
  out.routing = Routing{reshape(expert, {expert.shape().numel()}), reshape(combined, {combined.shape().numel(), 1}),
                        token, k_secondary};
  out.importance = expert_importance(out.routing, a * b);
  if (want_losses) {
    // Load_i(X(i))_j: the smooth secondary load of each group over its own rows (or true counts).
    Expr load2;
    if (smooth2) {
      load2 = index_add(g.input(Tensor::zeros(Shape{a, b}, clean2.dtype(), g.device())), group, secondary.prob);
    } else {
      load2 = reshape(expert_counts(expert, a * b, clean2.dtype()), {a, b});
    }
    Expr count = reshape(expert_counts(pr.expert, a, clean2.dtype()), {a, 1});
    Expr load = reshape(primary.load, {a, 1}) * load2 / scale(count, 1.f, 1e-10f);
    out.load = reshape(load, {a * b});
  }
  return out;
}

}  // namespace moe
