// Graph node for dropout: one fresh rng stream per node, shared by forward and backward.
#include "graph/expr/dropout.h"

#include "ops/dropout.h"

namespace moe {

Expr dropout(const Expr& x, float p) {
  MOE_CHECK(p >= 0.f && p < 1.f, "dropout: probability ", p, " is not in [0, 1) (input ", x.shape(), ")");
  Graph& g = x.graph();
  if (!g.training() || p == 0.f) return x;
  const uint64_t seed = g.seed(), rng = g.next_rng_stream();
  return g.add(
      "dropout", x.shape(), x.dtype(), {x}, [=](Node& n) { dropout_forward(n.in(0), n.alloc_val(), p, seed, rng); },
      [=](Node& n) { dropout_backward(n.grad, n.grad_of(0), p, seed, rng); });
}

}  // namespace moe
