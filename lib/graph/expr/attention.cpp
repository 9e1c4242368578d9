// Graph node for fused attention: forward writes out and keeps the row log-sum-exp (lse) for the
// backward pass, which adds dq, dk, dv and d head_weight for the children that want gradients.
// Covered by tests/ops/attention_test.cpp (finite differences) and tests/gpu/attention_parity_test.cpp.
#include "graph/expr/attention.h"

#include <memory>

namespace moe {

Expr attention(const Expr& q, const Expr& k, const Expr& v, const Tensor& key_padding, bool causal, float scale,
               const Expr& head_weight, float dropout, const Tensor& key_rows) {
  Graph& g = q.graph();
  const AttentionDropout drop =
      g.training() && dropout > 0.f ? AttentionDropout{dropout, g.seed(), g.next_rng_stream()} : AttentionDropout{};
  Tensor pad = key_padding;
  if (pad.defined() && pad.device() != g.device()) pad = pad.to(g.device());
  Tensor rows = key_rows;
  if (rows.defined() && rows.device() != g.device()) rows = rows.to(g.device());
  std::vector<Expr> children{q, k, v};
  const bool weighted = head_weight.defined();
  if (weighted) children.push_back(head_weight);
  auto lse = std::make_shared<Tensor>();
  return g.add(
      "attention", q.shape(), q.dtype(), children,
      [pad, causal, scale, weighted, lse, drop, rows](Node& n) {
        const Tensor& qv = n.in(0);
        *lse = Tensor::empty(Shape{qv.shape()[0], qv.shape()[2], qv.shape()[1]}, attention_lse_dtype(qv.dtype()),
                             qv.device());
        attention_forward(qv, n.in(1), n.in(2), pad, causal, scale, weighted ? n.in(3) : Tensor(), n.alloc_val(), *lse,
                          drop, rows);
      },
      [pad, causal, scale, weighted, lse, drop, rows](Node& n) {
        MOE_CHECK(!rows.defined(), "attention over a decoding cache (key_rows) has no backward");
        Tensor none;
        Tensor& dq = n.wants_grad(0) ? n.grad_of(0) : none;
        Tensor none_k, none_v, none_w;
        Tensor& dk = n.wants_grad(1) ? n.grad_of(1) : none_k;
        Tensor& dv = n.wants_grad(2) ? n.grad_of(2) : none_v;
        Tensor& dw = weighted && n.wants_grad(3) ? n.grad_of(3) : none_w;
        attention_backward(n.in(0), n.in(1), n.in(2), pad, causal, scale, weighted ? n.in(3) : Tensor(), n.val, *lse,
                           n.grad, dq, dk, dv, dw, drop);
      });
}

}  // namespace moe
