// Graph nodes of the MoE routing ops (math in lib/ops/moe_gating.h). Integer and mask outputs
// are marked as taking no gradient, so nothing flows back through them.
#include "graph/expr/moe_gating.h"

#include "ops/moe_gating.h"

namespace moe {
namespace {
Tensor* grad_or_null(Node& n, int i) { return n.wants_grad(i) ? &n.grad_of(i) : nullptr; }
Expr no_grad(Expr e) {
  e->requires_grad = false;
  e->backward = nullptr;
  return e;
}
}  // namespace

Expr gate_noise(const Expr& clean, const Expr& sigma, uint64_t seed, uint64_t stream) {
  MOE_CHECK(clean.shape() == sigma.shape() && clean.dtype() == sigma.dtype(), "gate_noise: logits ", clean.shape(),
            " ", dtype_name(clean.dtype()), " and noise stddev ", sigma.shape(), " ", dtype_name(sigma.dtype()),
            " must match");
  return clean.graph().add(
      "gate_noise", clean.shape(), clean.dtype(), {clean, sigma},
      [seed, stream](Node& n) { gate_noise_forward(n.in(0), n.in(1), n.alloc_val(), seed, stream); },
      [seed, stream](Node& n) {
        gate_noise_backward(n.in(1), n.grad, grad_or_null(n, 0), grad_or_null(n, 1), seed, stream);
      });
}

Expr prob_in_top_k(const Expr& clean, const Expr& noisy, const Expr& sigma, const Expr& top) {
  MOE_CHECK(clean.shape().ndim() == 2 && noisy.shape() == clean.shape() && sigma.shape() == clean.shape(),
            "prob_in_top_k: clean ", clean.shape(), ", noisy ", noisy.shape(), " and stddev ", sigma.shape(),
            " must be equal [rows, experts] shapes");
  return clean.graph().add(
      "prob_in_top_k", clean.shape(), clean.dtype(), {clean, noisy, sigma, top},
      [](Node& n) { prob_in_top_k_forward(n.in(0), n.in(1), n.in(2), n.in(3), n.alloc_val()); },
      [](Node& n) {
        prob_in_top_k_backward(n.in(0), n.in(1), n.in(2), n.in(3), n.grad, grad_or_null(n, 0), grad_or_null(n, 2),
                               grad_or_null(n, 3));
      });
}

Expr route_index(const Expr& outer, int64_t divisor, const Expr& inner, int64_t inner_size) {
  const Shape shape = inner.defined() ? inner.shape() : outer.shape();
  std::vector<Expr> children{outer};
  if (inner.defined()) children.push_back(inner);
  return no_grad(outer.graph().add("route_index", shape, DType::i32, children, [divisor, inner_size](Node& n) {
    route_index(n.in(0), n.children.size() > 1 ? n.in(1) : Tensor(), divisor, inner_size, n.alloc_val());
  }));
}

Expr iota_index(Graph& g, int64_t n, int64_t divisor) {
  MOE_CHECK(n >= 0, "iota_index: negative length ", n);
  return no_grad(g.add("iota_index", Shape{n}, DType::i32, {}, [divisor](Node& n) {
    route_index(Tensor(), Tensor(), divisor, 1, n.alloc_val());
  }));
}

Expr threshold_mask(const Expr& x, const Expr& thresholds, const Expr& experts) {
  std::vector<Expr> children{x, thresholds};
  if (experts.defined()) children.push_back(experts);
  return no_grad(x.graph().add("threshold_mask", x.shape(), x.dtype(), children, [](Node& n) {
    threshold_mask(n.in(0), n.children.size() > 2 ? n.in(2) : Tensor(), n.in(1), n.alloc_val());
  }));
}

Expr stop_gradient(const Expr& x) {
  return no_grad(x.graph().add("stop_gradient", x.shape(), x.dtype(), {x}, [](Node& n) { n.val = n.in(0); }));
}

}  // namespace moe
