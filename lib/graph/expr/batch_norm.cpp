// Graph node for batch_norm: the forward keeps the per-column mean and rstd it used (shared with
// the backward closure) and updates the running statistics in place in training mode. The
// statistics come as tensors or as no-gradient leaves (children read when the node runs).
// Covered by tests/ops/batch_norm_test.cpp.
#include "graph/expr/batch_norm.h"

#include <memory>

#include "ops/layer_norm.h"  // norm_stat_dtype

namespace moe {

namespace {
struct Saved {
  Tensor mean, rstd, running_mean, running_var;
};

/// rm/rv: running-statistics leaves (children), or undefined to use saved's tensors.
Expr batch_norm_node(const Expr& x, const Expr& gamma, const Expr& beta, const Expr& rm, const Expr& rv,
                     std::shared_ptr<Saved> saved, bool training, float momentum, float eps) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() >= 1,
            "batch_norm: the input needs a non-empty last (column) axis, not shape ", x.shape());
  const int64_t C = x.shape().last();
  for (const Expr* p : {&gamma, &beta})
    if (p->defined())
      MOE_CHECK(p->shape() == Shape{C}, "batch_norm: ", p == &gamma ? "gamma" : "beta", " has shape ", p->shape(),
                " but [", C, "] is required for input ", x.shape());
  for (const Tensor* t : {&saved->running_mean, &saved->running_var})
    MOE_CHECK(!t->defined() || t->device() == x.graph().device(), "batch_norm: the running statistics are on ",
              t->device(), " but the graph is on ", x.graph().device(), " (they are updated in place)");
  MOE_CHECK(rm.defined() == rv.defined(), "batch_norm: give both running_mean and running_var leaves or neither");
  std::vector<Expr> children{x};
  auto push = [&](const Expr& e) {
    if (!e.defined()) return -1;
    children.push_back(e);
    return static_cast<int>(children.size()) - 1;
  };
  const int gi = push(gamma), bi = push(beta), si = push(rm);
  push(rv);
  const DType sd = norm_stat_dtype(x.dtype());
  return x.graph().add(
      training ? "batch_norm(train)" : "batch_norm(eval)", x.shape(), x.dtype(), std::move(children),
      [saved, gi, bi, si, training, momentum, eps, sd, C](Node& n) {
        if (si >= 0) {  // handles share the leaves' storage: the update lands in the store
          saved->running_mean = n.in(si);
          saved->running_var = n.in(si + 1);
        }
        saved->mean = Tensor::empty(Shape{C}, sd, n.graph->device());
        saved->rstd = Tensor::empty(Shape{C}, sd, n.graph->device());
        batch_norm_forward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), bi >= 0 ? n.in(bi) : Tensor(), saved->running_mean,
                           saved->running_var, training, momentum, eps, n.alloc_val(), saved->mean, saved->rstd);
        if (si >= 0) saved->running_mean = saved->running_var = Tensor();
      },
      [saved, gi, bi, training](Node& n) {
        Tensor dx = n.wants_grad(0) ? n.grad_of(0) : Tensor();
        Tensor dg = gi >= 0 && n.wants_grad(gi) ? n.grad_of(gi) : Tensor();
        Tensor db = bi >= 0 && n.wants_grad(bi) ? n.grad_of(bi) : Tensor();
        batch_norm_backward(n.in(0), gi >= 0 ? n.in(gi) : Tensor(), saved->mean, saved->rstd, training, n.grad, dx, dg,
                            db);
      });
}
}  // namespace

Expr batch_norm(const Expr& x, const Expr& gamma, const Expr& beta, Tensor running_mean, Tensor running_var,
                bool training, float momentum, float eps) {
  auto saved = std::make_shared<Saved>();
  saved->running_mean = running_mean;
  saved->running_var = running_var;
  return batch_norm_node(x, gamma, beta, Expr(), Expr(), saved, training, momentum, eps);
}

Expr batch_norm(const Expr& x, const Expr& gamma, const Expr& beta, const Expr& running_mean, const Expr& running_var,
                bool training, float momentum, float eps) {
  MOE_CHECK(
      running_mean.defined() && running_var.defined() && !running_mean->requires_grad && !running_var->requires_grad,
      "batch_norm: running statistics leaves must be defined and take no gradient");
  return batch_norm_node(x, gamma, beta, running_mean, running_var, std::make_shared<Saved>(), training, momentum, eps);
}

}  // namespace moe
