// moe_ffn_dispatch.h implementation: each expert layer is one grouped GEMM with its autoscale factor, bias
// and the relu between layers fused into the epilogue (graph/expr/grouped_gemm.h), so no [rows, h] pass
// or gathered bias besides the product. Covered by tests/layers/moe_ffn_test.cpp.
#include "layers/moe_ffn_dispatch.h"

#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/grouped_gemm.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/sort.h"

namespace moe {

GroupedMatmulEpilogue expert_epilogue(const ExpertWeights& experts, size_t l, int64_t d, bool autoscale) {
  const int64_t in = experts.layers[l].shape()[1];
  GroupedMatmulEpilogue epi;
  if (autoscale && in != d) epi.alpha = static_cast<float>(1.0 / std::sqrt(double(in) / double(d)));
  if (!experts.biases.empty()) epi.bias = experts.biases[l];
  if (l + 1 < experts.layers.size()) epi.act = GroupedActivation::relu;
  return epi;
}

Expr moe_dispatch(const Expr& x, const Routing& routing, const ExpertWeights& experts, bool autoscale) {
  MOE_CHECK(x.shape().ndim() == 2, "moe dispatch: x must be [tokens, d], not ", x.shape());
  MOE_CHECK(!experts.layers.empty(), "moe dispatch: no expert layers");
  MOE_CHECK(experts.biases.empty() || experts.biases.size() == experts.layers.size(), "moe dispatch: ",
            experts.biases.size(), " biases for ", experts.layers.size(), " layers");
  const int64_t d = x.shape()[1];
  const int64_t num_experts = experts.layers[0].shape()[0];
  const int64_t m = routing.expert.shape().numel();
  MOE_CHECK(routing.weight.shape() == Shape({m, 1}), "moe dispatch: gate weights ", routing.weight.shape(),
            " must be [", m, ", 1] for ", m, " assignments");
  Graph& g = x.graph();

  const SortedSegments sorted = sort_by_key(routing.expert, static_cast<int>(num_experts));
  Expr tokens = route_index(sorted.perm, routing.per_token);  // assignment -> token (or token slot)
  if (routing.token.defined()) tokens = index_select(routing.token, tokens);
  Expr h = index_select(x, tokens);  // [M, d], rows in expert order
  for (size_t l = 0; l < experts.layers.size(); ++l) {
    const Expr& w = experts.layers[l];
    MOE_CHECK(w.shape().ndim() == 3 && w.shape()[0] == num_experts && w.shape()[1] == h.shape()[1], "moe dispatch: ",
              "layer ", l, " weight ", w.shape(), " does not fit input rows ", h.shape(), " for ", num_experts,
              " experts");
    h = grouped_matmul(h, w, sorted.offsets, false, expert_epilogue(experts, l, d, autoscale));
  }
  MOE_CHECK(h.shape()[1] == d, "moe dispatch: the experts map ", d, " features to ", h.shape()[1]);
  h = h * cast(index_select(routing.weight, sorted.perm), x.dtype());
  Expr base = g.input(Tensor::zeros(x.shape(), x.dtype(), g.device()));
  return index_add(base, tokens, h);
}

}  // namespace moe
