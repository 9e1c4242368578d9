// Graph node for bias_act_dropout: the mask's stream is taken when the node is built, as dropout's.
#include "graph/expr/bias_act_dropout.h"

#include "ops/bias_act_dropout.h"

namespace moe {

Expr bias_act_dropout(const Expr& x, const Expr& bias, UnaryOp act, float p) {
  MOE_CHECK(p >= 0.f && p < 1.f, "bias_act_dropout: probability ", p, " is not in [0, 1) (input ", x.shape(), ")");
  Graph& g = x.graph();
  DropoutMask m;
  if (g.training() && p > 0.f) m = DropoutMask{p, g.seed(), g.next_rng_stream()};
  return g.add(
      "bias_act_dropout", x.shape(), x.dtype(), {x, bias},
      [=](Node& n) { bias_act_dropout_forward(n.in(0), n.in(1), act, m, n.alloc_val()); },
      [=](Node& n) {
        bias_act_dropout_backward(n.in(0), n.in(1), n.grad, act, m, n.wants_grad(0) ? &n.grad_of(0) : nullptr,
                                  n.wants_grad(1) ? &n.grad_of(1) : nullptr);
      });
}

}  // namespace moe
