// moe_capacity.h implementation. For M assignments sorted stably by expert (perm, offsets), sorted
// position j holds expert e_j and rank r_j = j - offsets[e_j] in its expert's queue; it is kept when
// r_j < C, in buffer row e_j C + r_j, and dropped rows go to a spare row n C that no expert reads:
//   keep_j = min(relu(C - r_j), 1),   row_j = keep_j (e_j C + r_j - n C) + n C    (exact in f32 below 2^24).
// Covered by tests/layers/moe_capacity_test.cpp.
#include "layers/moe_capacity.h"

#include <algorithm>
#include <cmath>

#include "dist/communicator.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/sort.h"
#include "graph/expr/unary.h"
#include "layers/moe_ffn_expert_parallel.h"

namespace moe {

int64_t token_capacity(double factor, int64_t rows, int64_t per_token, int64_t experts) {
  MOE_CHECK(factor > 0 && experts > 0, "token capacity: factor ", factor, " and experts ", experts, " must be > 0");
  const double c = std::ceil(factor * static_cast<double>(rows * per_token) / static_cast<double>(experts) - 1e-9);
  return std::max<int64_t>(1, static_cast<int64_t>(c));
}

CapacityCount count_capacity(const std::vector<int32_t>& expert, int64_t experts, int64_t capacity) {
  std::vector<int64_t> count(static_cast<size_t>(experts), 0);
  for (int32_t e : expert) {
    MOE_CHECK(e >= 0 && e < experts, "token capacity: expert ", e, " out of range [0, ", experts, ")");
    ++count[static_cast<size_t>(e)];
  }
  CapacityCount c;
  c.pairs = static_cast<int64_t>(expert.size());
  for (int64_t n : count) c.dropped += std::max<int64_t>(0, n - capacity);
  c.kept = c.pairs - c.dropped;
  c.slots = experts * capacity;
  return c;
}

Expr moe_dispatch_capacity(const Expr& x, const Routing& routing, int64_t experts, int64_t capacity,
                           const ExpertWeights& local, bool autoscale, dist::Communicator* comm) {
  MOE_CHECK(x.shape().ndim() == 2, "moe capacity: x must be [tokens, d], not ", x.shape());
  MOE_CHECK(capacity >= 1 && experts * capacity < (int64_t{1} << 24), "moe capacity: ", experts, " experts x capacity ",
            capacity, " must be in [1, 2^24)");
  Graph& g = x.graph();
  const int64_t m = routing.expert.shape().numel(), d = x.shape()[1], spare = experts * capacity;
  const DType f32 = DType::f32;
  auto zeros = [&](const Shape& s, DType t) { return g.input(Tensor::zeros(s, t, g.device())); };
  if (m == 0) return zeros(x.shape(), x.dtype());

  const SortedSegments sorted = sort_by_key(routing.expert, static_cast<int>(experts));
  Expr tokens = route_index(sorted.perm, routing.per_token);  // sorted assignment -> token (or token slot)
  if (routing.token.defined()) tokens = index_select(routing.token, tokens);
  // The slot arithmetic on exact small integers in f32 (no gradient: everything here is an index).
  const Expr e = index_select(cast(reshape(routing.expert, {m, 1}), f32), sorted.perm);  // [M, 1]
  const Expr start =
      index_select(cast(reshape(sorted.offsets, {experts + 1, 1}), f32), cast(reshape(e, {m}), DType::i32));
  const Expr rank = cast(reshape(iota_index(g, m), {m, 1}), f32) - start;
  const Expr keep = scale(relu(scale(relu(scale(rank, -1.f, static_cast<float>(capacity))), -1.f, 1.f)), -1.f, 1.f);
  const Expr slot = scale(e, static_cast<float>(capacity)) + rank;
  const Expr row_f = scale(keep * scale(slot, 1.f, -static_cast<float>(spare)), 1.f, static_cast<float>(spare));
  const Expr rows = cast(reshape(row_f, {m}), DType::i32);

  // The experts' buffers: row e C + r holds the r-th kept assignment of expert e (zero rows beyond).
  const Expr buffer =
      slice(index_add(zeros(Shape{spare + 1, d}, x.dtype()), rows, index_select(x, tokens)), 0, 0, spare);
  const Routing slots{iota_index(g, spare, capacity), scale(zeros(Shape{spare, 1}, f32), 0.f, 1.f), Expr(), 1};
  const bool several = comm && comm->world() > 1;
  const Expr out = several ? moe_dispatch_expert_parallel(buffer, slots, local, autoscale, *comm)
                           : moe_dispatch(buffer, slots, local, autoscale);
  const Expr padded = concat({out, zeros(Shape{1, d}, x.dtype())}, 0);  // the spare row reads 0
  const Expr y = index_select(padded, rows) * cast(index_select(routing.weight, sorted.perm), x.dtype());
  return index_add(zeros(x.shape(), x.dtype()), tokens, y);
}

}  // namespace moe
