// Graph node for batch_norm: the forward keeps the per-column mean and rstd it used (shared with
// the backward closure) and updates the running statistics in place in training mode.
// Covered by tests/ops/batch_norm_test.cpp.
#include "graph/expr/batch_norm.h"

#include <memory>

#include "ops/layer_norm.h"  // norm_stat_dtype

namespace moe {

Expr batch_norm(const Expr& x, const Expr& gamma, const Expr& beta, Tensor running_mean, Tensor running_var,
                bool training, float momentum, float eps) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() >= 1,
            "batch_norm: the input needs a non-empty last (column) axis, not shape ", x.shape());
  const int64_t C = x.shape().last();
  for (const Expr* p : {&gamma, &beta})
    if (p->defined())
      MOE_CHECK(p->shape() == Shape{C}, "batch_norm: ", p == &gamma ? "gamma" : "beta", " has shape ", p->shape(),
                " but [", C, "] is required for input ", x.shape());
  for (const Tensor* t : {&running_mean, &running_var})
    MOE_CHECK(!t->defined() || t->device() == x.graph().device(), "batch_norm: the running statistics are on ",
              t->device(), " but the graph is on ", x.graph().device(), " (they are updated in place)");
  std::vector<Expr> children{x};
  const int gi = gamma.defined() ? static_cast<int>(children.size()) : -1;
  if (gamma.defined()) children.push_back(gamma);
  const int bi = beta.defined() ? static_cast<int>(children.size()) : -1;
  if (beta.defined()) children.push_back(beta);
  struct Saved {
    Tensor mean, rstd, running_mean, running_var;
  };
  auto saved = std::make_shared<Saved>();
  saved->running_mean = running_mean;
  saved->running_var = running_var;
  const DType sd = norm_stat_dtype(x.dtype());
  return x.graph().add(
      training ? "batch_norm(train)" : "batch_norm(eval)", x.shape(), x.dtype(), std::move(children),
      [saved, gi, bi, training, momentum, eps, sd, C](Node& n) {
        saved->mean = Tensor::empty(Shape{C}, sd, n.graph->device());
        saved->rstd = Tensor::empty(Shape{C}, sd, n.graph->device());
        batch_norm_forward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), bi >= 0 ? n.in(bi) : Tensor(), saved->running_mean,
                           saved->running_var, training, momentum, eps, n.alloc_val(), saved->mean, saved->rstd);
      },
      [saved, gi, bi, training](Node& n) {
        Tensor dx = n.wants_grad(0) ? n.grad_of(0) : Tensor();
        Tensor dg = gi >= 0 && n.wants_grad(gi) ? n.grad_of(gi) : Tensor();
        Tensor db = bi >= 0 && n.wants_grad(bi) ? n.grad_of(bi) : Tensor();
        batch_norm_backward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), saved->mean, saved->rstd, training, n.grad, dx, dg,
                            db);
      });
}

}  // namespace moe
