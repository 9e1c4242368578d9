// Graph node for layer_norm: the forward keeps the per-row mean and rstd (shared with the
// backward closure); the backward adds into dx, dgamma and dbeta for the children that want them.
// Covered by tests/ops/layer_norm_test.cpp.
#include "graph/expr/layer_norm.h"

#include <memory>

namespace moe {

Expr layer_norm(const Expr& x, const Expr& gamma, const Expr& beta, float eps) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() >= 1,
            "layer_norm: the input needs a non-empty last axis, not shape ", x.shape());
  const int64_t d = x.shape().last();
  for (const Expr* p : {&gamma, &beta})
    if (p->defined())
      MOE_CHECK(p->shape() == Shape{d}, "layer_norm: ", p == &gamma ? "gamma" : "beta", " has shape ", p->shape(),
                " but [", d, "] is required for input ", x.shape());
  std::vector<Expr> children{x};
  const int gi = gamma.defined() ? static_cast<int>(children.size()) : -1;
  if (gamma.defined()) children.push_back(gamma);
  const int bi = beta.defined() ? static_cast<int>(children.size()) : -1;
  if (beta.defined()) children.push_back(beta);
  struct Saved {
    Tensor mean, rstd;
  };
  auto saved = std::make_shared<Saved>();
  const Shape stat{x.shape().numel() / d};
  const DType sd = norm_stat_dtype(x.dtype());
  return x.graph().add(
      "layer_norm", x.shape(), x.dtype(), std::move(children),
      [saved, gi, bi, eps, stat, sd](Node& n) {
        saved->mean = Tensor::empty(stat, sd, n.graph->device());
        saved->rstd = Tensor::empty(stat, sd, n.graph->device());
        layer_norm_forward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), bi >= 0 ? n.in(bi) : Tensor(), n.alloc_val(),
                           saved->mean, saved->rstd, eps);
      },
      [saved, gi, bi](Node& n) {
        Tensor dx = n.wants_grad(0) ? n.grad_of(0) : Tensor();
        Tensor dg = gi >= 0 && n.wants_grad(gi) ? n.grad_of(gi) : Tensor();
        Tensor db = bi >= 0 && n.wants_grad(bi) ? n.grad_of(bi) : Tensor();
        layer_norm_backward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), saved->mean, saved->rstd, n.grad, dx, dg, db);
      });
}

}  // namespace moe
