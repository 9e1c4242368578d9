// moe_ffn_expert_parallel.h implementation. Covered by tests/dist/expert_parallel_test.cpp.
#include "layers/moe_ffn_expert_parallel.h"

#include "dist/collective_exprs.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/grouped_gemm.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/sort.h"

namespace moe {

Expr moe_dispatch_expert_parallel(const Expr& x, const Routing& routing, const ExpertWeights& local, bool autoscale,
                                  dist::Communicator& comm) {
  MOE_CHECK(x.shape().ndim() == 2, "moe dispatch: x must be [tokens, d], not ", x.shape());
  MOE_CHECK(!local.layers.empty(), "moe dispatch: no expert layers");
  const int world = comm.world();
  const int64_t d = x.shape()[1], per_rank = local.layers[0].shape()[0], n = per_rank * world;
  const int64_t m = routing.expert.shape().numel();
  Graph& g = x.graph();

  const SortedSegments sorted = sort_by_key(routing.expert, static_cast<int>(n));
  Expr tokens = route_index(sorted.perm, routing.per_token);
  if (routing.token.defined()) tokens = index_select(routing.token, tokens);
  const Expr h = index_select(x, tokens);  // [M, d], rows in (global) expert order
  g.forward();  // the routing decides the sizes of the exchange
  const std::vector<int32_t> off = sorted.offsets.val().to_vector<int32_t>();
  MOE_CHECK(static_cast<int64_t>(off.size()) == n + 1 && off[static_cast<size_t>(n)] == m,
            "moe expert parallel: routing names experts outside [0, ", n, ")");
  // counts[k * e + j]: rows for expert j of rank k; recv_counts[s * e + j]: rows rank s sends for my expert j.
  std::vector<int64_t> counts(static_cast<size_t>(n)), send(static_cast<size_t>(world), 0);
  for (int64_t e = 0; e < n; ++e) {
    counts[static_cast<size_t>(e)] = off[static_cast<size_t>(e + 1)] - off[static_cast<size_t>(e)];
    send[static_cast<size_t>(e / per_rank)] += counts[static_cast<size_t>(e)];
  }
  const Tensor recv_counts_t = Tensor::zeros(Shape{n, 1}, DType::i64, Device::cpu());
  const std::vector<int64_t> per(static_cast<size_t>(world), per_rank);
  comm.all_to_all_v(Tensor::from_vector(counts, Shape{n, 1}), per, recv_counts_t, per);
  const std::vector<int64_t> rc = recv_counts_t.to_vector<int64_t>();
  std::vector<int64_t> recv(static_cast<size_t>(world), 0);
  for (int64_t i = 0; i < n; ++i) recv[static_cast<size_t>(i / per_rank)] += rc[static_cast<size_t>(i)];

  const Expr received = dist::all_to_all_rows(comm, h, send, recv);  // by source rank, then local expert
  // Regroup by local expert (then source rank): perm[j] = the received row that goes to position j.
  std::vector<int64_t> start(static_cast<size_t>(n));  // where (source s, expert j) begins in `received`
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) start[static_cast<size_t>(i)] = at, at += rc[static_cast<size_t>(i)];
  std::vector<int32_t> perm, local_off{0};
  for (int64_t j = 0; j < per_rank; ++j) {
    for (int s = 0; s < world; ++s) {
      const size_t i = static_cast<size_t>(s * per_rank + j);
      for (int64_t r = 0; r < rc[i]; ++r) perm.push_back(static_cast<int32_t>(start[i] + r));
    }
    local_off.push_back(static_cast<int32_t>(perm.size()));
  }
  const int64_t rows = static_cast<int64_t>(perm.size());
  const Expr perm_e = g.input(Tensor::from_vector(perm, Shape{rows}));
  const Expr offsets_e = g.input(Tensor::from_vector(local_off, Shape{per_rank + 1}));
  Expr y = index_select(received, perm_e);
  for (size_t l = 0; l < local.layers.size(); ++l) {
    const Expr& w = local.layers[l];
    MOE_CHECK(w.shape().ndim() == 3 && w.shape()[0] == per_rank && w.shape()[1] == y.shape()[1],
              "moe expert parallel: layer ", l, " weight ", w.shape(), " does not fit rows ", y.shape());
    y = grouped_matmul(y, w, offsets_e, false, expert_epilogue(local, l, d, autoscale));
  }
  MOE_CHECK(y.shape()[1] == d, "moe expert parallel: the experts map ", d, " features to ", y.shape()[1]);
  y = index_select(y, inverse_permutation(perm_e));        // the received order
  Expr back = dist::all_to_all_rows(comm, y, recv, send);  // [M, d] in h's order
  back = back * cast(index_select(routing.weight, sorted.perm), x.dtype());
  return index_add(g.input(Tensor::zeros(x.shape(), x.dtype(), g.device())), tokens, back);
}

}  // namespace moe
