// Graph nodes of top-k: an i32 "topk_indices" node runs the kernel (values and indices in one
// pass) and hands the values to the "topk" node through a shared slot, so nothing is computed
// twice; the "topk" node (children x, indices) owns the gradient: dx[idx] += dvalues.
#include "graph/expr/topk.h"

#include <memory>

namespace moe {

TopK topk(const Expr& x, int64_t k) {
  Graph& g = x.graph();
  MOE_CHECK(x.shape().ndim() >= 1 && k >= 1 && k <= x.shape().last(), "topk: k = ", k, " must be in [1, ",
            x.shape().ndim() ? x.shape().last() : 0, "] for x of shape ", x.shape());
  const Shape out = x.shape().with(-1, k);
  auto slot = std::make_shared<Tensor>();
  Expr indices = g.add("topk_indices", out, DType::i32, {x}, [slot](Node& n) {
    *slot = Tensor::empty(n.shape, n.in(0).dtype(), n.in(0).device());
    topk_forward(n.in(0), *slot, n.alloc_val());
  });
  indices->requires_grad = false;  // integer output: no gradient flows through it
  Expr values = g.add(
      "topk", out, x.dtype(), {x, indices},
      [slot](Node& n) {
        MOE_CHECK(slot->defined(), "topk: the values were already taken (node computed twice?)");
        n.val = *slot;
        *slot = Tensor();
      },
      [](Node& n) {
        if (n.wants_grad(0)) topk_backward(n.in(1), n.grad, n.grad_of(0));
      });
  return {values, indices};
}

}  // namespace moe
