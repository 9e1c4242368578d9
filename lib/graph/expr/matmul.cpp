// Graph nodes for matmul and linear: forward via matmul_forward / linear_forward, backward as
// GEMMs that accumulate (beta = 1) into the children's gradients. A 2-D operand shared over a
// batch gets its gradient summed over the batch: by flattening rows when possible, otherwise by a
// loop of 2-D GEMMs over the batch items.
#include "graph/expr/matmul.h"

#include <algorithm>

namespace moe {

namespace {
/// Batch item i of a tensor with >= 3 axes, as a 2-D [rows, cols] view.
Tensor slice(const Tensor& t, int64_t i) {
  const Shape& s = t.shape();
  const int64_t r = s[-2], c = s[-1];
  return t.view(Shape{s.numel() / std::max<int64_t>(1, r * c), r, c}).rows(i, 1).view(Shape{r, c});
}

// dA += alpha * dC @ op(b)^T   (or, for trans_a, dA += alpha * op(b) @ dC^T)
void grad_a(const Tensor& b, const Tensor& dc, Tensor& da, bool ta, bool tb, float alpha) {
  if (!ta) matmul_forward(dc, b, da, false, !tb, alpha, 1.f);
  else matmul_forward(b, dc, da, tb, true, alpha, 1.f);
}
// dB += alpha * op(a)^T @ dC   (or, for trans_b, dB += alpha * dC^T @ op(a))
void grad_b(const Tensor& a, const Tensor& dc, Tensor& db, bool ta, bool tb, float alpha) {
  if (!tb) matmul_forward(a, dc, db, !ta, false, alpha, 1.f);
  else matmul_forward(dc, a, db, true, ta, alpha, 1.f);
}
}  // namespace

Expr matmul(const Expr& a, const Expr& b, bool trans_a, bool trans_b, float alpha) {
  MOE_CHECK(a.dtype() == b.dtype(), "matmul: operand dtypes differ (", dtype_name(a.dtype()), " and ",
            dtype_name(b.dtype()), ") for ", a.shape(), " @ ", b.shape());
  const MatmulPlan p = matmul_plan(a.shape(), b.shape(), trans_a, trans_b);
  return a.graph().add(
      "matmul", p.out, a.dtype(), {a, b},
      [=](Node& n) { matmul_forward(n.in(0), n.in(1), n.alloc_val(), trans_a, trans_b, alpha, 0.f); },
      [=](Node& n) {
        const Tensor &va = n.in(0), &vb = n.in(1), &dc = n.grad;
        const int da = va.shape().ndim(), db = vb.shape().ndim();
        if (n.wants_grad(0)) {
          Tensor& ga = n.grad_of(0);
          if (da == 2 && db > 2)  // a shared over the batch of b
            for (int64_t i = 0; i < p.batch; ++i) grad_a(slice(vb, i), slice(dc, i), ga, trans_a, trans_b, alpha);
          else grad_a(vb, dc, ga, trans_a, trans_b, alpha);
        }
        if (n.wants_grad(1)) {
          Tensor& gb = n.grad_of(1);
          if (db == 2 && da > 2 && trans_a)  // b shared over the batch of a^T
            for (int64_t i = 0; i < p.batch; ++i) grad_b(slice(va, i), slice(dc, i), gb, trans_a, trans_b, alpha);
          else if (db == 2 && da > 2)  // rows of a flattened: one GEMM over all rows
            grad_b(va.view(Shape{p.m, p.k}), dc.view(Shape{p.m, p.n}), gb, false, trans_b, alpha);
          else grad_b(va, dc, gb, trans_a, trans_b, alpha);
        }
      });
}

Expr linear(const Expr& x, const Expr& w, const Expr& bias) {
  MOE_CHECK(w.shape().ndim() == 2, "linear: weight must be [in, out], got ", w.shape());
  MOE_CHECK(x.dtype() == w.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), "linear: dtypes differ (x ",
            dtype_name(x.dtype()), ", w ", dtype_name(w.dtype()), ")");
  const MatmulPlan p = matmul_plan(x.shape(), w.shape(), false, false, "linear");
  if (bias.defined())
    MOE_CHECK(bias.shape() == Shape{w.shape()[1]}, "linear: bias has shape ", bias.shape(), " but [",
              w.shape()[1], "] is required for weight ", w.shape());
  std::vector<Expr> children{x, w};
  const bool has_bias = bias.defined();
  if (has_bias) children.push_back(bias);
  return x.graph().add(
      "linear", p.out, x.dtype(), children,
      [has_bias](Node& n) { linear_forward(n.in(0), n.in(1), has_bias ? n.in(2) : Tensor(), n.alloc_val()); },
      [p, has_bias](Node& n) {
        const Tensor &vx = n.in(0), &vw = n.in(1), &dc = n.grad;
        if (n.wants_grad(0)) matmul_forward(dc, vw, n.grad_of(0), false, true, 1.f, 1.f);
        if (n.wants_grad(1))
          matmul_forward(vx.view(Shape{p.m, p.k}), dc.view(Shape{p.m, p.n}), n.grad_of(1), true, false, 1.f, 1.f);
        if (has_bias && n.wants_grad(2)) bias_grad(dc, n.grad_of(2));
      });
}

}  // namespace moe
