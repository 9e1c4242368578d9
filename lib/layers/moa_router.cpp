// MoA router and auxiliary losses (docs/MODELS.md §2.2, §2.5); the recipe options are moa_options.cpp.
//   p = softmax(x W_g) (0 for padded tokens); (w, e) = topk(p, k); optional w / stopgrad(sum w + 1e-6)
//   switch = E sum_e P_e f_e, P_e = sum_t p_te / sum p, f_e = n_e / sum n (surviving pairs)
//   z = mean_t logsumexp(r_t)^2 (all tokens, pads included); cv = var_unbiased(c) / (mean(c)^2 + 1e-10)
// Covered by tests/layers/moa_test.cpp ("aux losses on a hand-computed router", options cases).
#include "graph/expr/binary.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "graph/expr/unary.h"
#include "layers/moa.h"

namespace moe {

namespace {
/// x without a gradient path (a view of x's value).
Expr detach(const Expr& x) {
  Expr d = x.graph().add("detach", x.shape(), x.dtype(), {x}, [](Node& n) { n.val = n.in(0); });
  d->requires_grad = false;
  return d;
}

}  // namespace

MoaRouting moa_route(const Expr& x2, const Expr& router, const Expr& keep, const MoaOptions& o, bool with_aux) {
  MOE_CHECK(x2.shape().ndim() == 2 && router.shape() == Shape({x2.shape()[1], int64_t{o.experts}}) &&
                x2.dtype() == router.dtype(),
            "moa router: tokens ", x2.shape(), " ", dtype_name(x2.dtype()), " do not fit router weights ",
            router.shape(), " ", dtype_name(router.dtype()), " for ", o.experts, " experts");
  const int64_t n = x2.shape()[0];
  MoaRouting r;
  r.logits = matmul(x2, router);
  r.probs = softmax(r.logits);
  Expr keep_col = keep.defined() ? reshape(keep, Shape{n, 1}) : Expr();
  if (keep_col.defined()) r.probs = mul(r.probs, keep_col);
  TopK top = topk(r.probs, o.k);
  r.experts = top.indices;
  r.gates = top.values;
  Expr denom;
  if (o.renormalize == MoaRenormalize::detached) {
    denom = add_scalar(detach(sum(r.gates, 1, true)), 1e-6f);
    r.gates = div(r.gates, denom);
  }
  if (o.k == o.experts) r.dense_gates = denom.defined() ? div(r.probs, denom) : r.probs;
  if (!with_aux) return r;

  // Load per expert: the surviving (token, slot) pairs routed to each expert (no gradient).
  Expr pd = detach(r.probs);
  Expr zeros = scale(pd, 0.f, 0.f);                      // [N, E]
  Expr ones = scale(detach(top.values), 0.f, 1.f);       // [N, k]
  Expr hits = scatter_add_last(zeros, r.experts, ones);  // [N, E]
  if (keep_col.defined()) hits = mul(hits, keep_col);
  Expr counts = sum(hits, 0);  // [E]
  Expr f = div(counts, add_scalar(sum_all(counts), 1e-30f));
  Expr p_mass = sum(r.probs, 0);  // [E]
  Expr big_p = div(p_mass, add_scalar(sum_all(p_mass), 1e-30f));
  r.switch_loss = mul_scalar(sum_all(mul(big_p, f)), static_cast<float>(o.experts));
  r.z_loss = mean_all(square(logsumexp(r.logits, 1)));
  Expr aux = add(mul_scalar(r.switch_loss, o.switch_loss), mul_scalar(r.z_loss, o.z_loss));
  if (o.cv_loss != 0.f) {
    // c_e = summed sparse gates; cv = unbiased var(c / sum c) / (mean^2 + 1e-10); 0 when E = 1.
    Expr c = sum(scatter_add_last(scale(pd, 0.f, 0.f), r.experts, r.gates), 0);
    c = div(c, add_scalar(sum_all(c), 1e-30f));
    const float e = static_cast<float>(o.experts);
    if (o.experts > 1) {
      Expr v = mul_scalar(var(c, 0), e / (e - 1.f));
      Expr m = mean_all(c);
      r.cv_loss = div(v, add_scalar(square(m), 1e-10f));
    } else {
      r.cv_loss = mul_scalar(sum_all(c), 0.f);
    }
    aux = add(aux, mul_scalar(r.cv_loss, o.cv_loss));
  }
  r.aux = aux;
  return r;
}

}  // namespace moe
