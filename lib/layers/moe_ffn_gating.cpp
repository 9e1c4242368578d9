// moe_ffn_gating.h implementation: noisy top-k gate, importance / counts / CV^2, batchwise gate.
// Covered by tests/layers/moe_ffn_test.cpp.
#include "layers/moe_ffn_gating.h"

#include <algorithm>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "graph/expr/unary.h"

namespace moe {
namespace {
Expr zeros_like_shape(Graph& g, const Shape& shape, DType dtype) {
  return g.input(Tensor::zeros(shape, dtype, g.device()));
}
Expr flat(const Expr& x) { return reshape(x, {x.shape().numel()}); }
Expr column(const Expr& x) { return reshape(x, {x.shape().numel(), 1}); }
}  // namespace

TopKGate noisy_top_k_gate(const Expr& clean, const Expr& raw_noise, int k, const GateNoise& noise,
                          float noise_epsilon, bool want_load) {
  MOE_CHECK(clean.shape().ndim() == 2, "moe gate: logits must be [rows, experts], not ", clean.shape());
  const int n = static_cast<int>(clean.shape()[1]);
  MOE_CHECK(k >= 1 && k <= n, "moe gate: k = ", k, " must be in [1, ", n, "] for logits ", clean.shape());
  const bool smooth = noise.enabled && k < n;
  Expr noisy = clean, sigma;
  if (noise.enabled) {
    MOE_CHECK(raw_noise.defined() && raw_noise.shape() == clean.shape(), "moe gate: noise logits ",
              raw_noise.defined() ? raw_noise.shape() : Shape{}, " must match the logits ", clean.shape());
    sigma = scale(softplus(raw_noise), 1.f, noise_epsilon);
    noisy = gate_noise(clean, sigma, noise.seed, noise.stream);
  }
  const TopK top = topk(noisy, smooth ? k + 1 : k);
  TopKGate gate;
  gate.indices = smooth ? slice(top.indices, 1, 0, k) : top.indices;
  gate.gates = softmax(smooth ? slice(top.values, 1, 0, k) : top.values);
  if (want_load) {
    if (smooth) {
      gate.prob = prob_in_top_k(clean, noisy, sigma, top.values);
      gate.load = sum(gate.prob, 0);
    } else {
      gate.load = expert_counts(flat(gate.indices), n, clean.dtype());
    }
  }
  return gate;
}

Routing top_k_routing(const TopKGate& gate) {
  return Routing{flat(gate.indices), column(gate.gates), Expr(), gate.indices.shape()[1]};
}

Expr expert_importance(const Routing& r, int n) {
  Graph& g = r.weight.graph();
  return flat(index_add(zeros_like_shape(g, Shape{n, 1}, r.weight.dtype()), r.expert, r.weight));
}

Expr expert_counts(const Expr& expert_ids, int n, DType dtype) {
  Graph& g = expert_ids.graph();
  const int64_t m = expert_ids.shape().numel();
  // ones [m, 1]: 0 * zeros + 1 (no gradient)
  Expr ones = scale(zeros_like_shape(g, Shape{m, 1}, dtype), 0.f, 1.f);
  return stop_gradient(flat(index_add(zeros_like_shape(g, Shape{n, 1}, dtype), flat(expert_ids), ones)));
}

Expr cv_squared(const Expr& v) {
  Expr x = flat(v);
  if (x.shape()[0] <= 1) return scale(sum_all(x), 0.f);  // one expert: CV = 0
  return var(x, 0) / scale(square(mean(x, 0)), 1.f, 1e-10f);
}

BatchwiseGate batchwise_gate(const Expr& logits, const Expr& thresholds, int k, bool training, int inference_k) {
  MOE_CHECK(logits.shape().ndim() == 2, "moe batchwise gate: logits must be [rows, experts], not ", logits.shape());
  const int64_t rows = logits.shape()[0];
  const int n = static_cast<int>(logits.shape()[1]);
  MOE_CHECK(thresholds.shape() == Shape{n}, "moe batchwise gate: thresholds ", thresholds.shape(), " must be [", n,
            "]");
  Graph& g = logits.graph();
  Expr probs = softmax(logits);  // G_sigma [R, n]
  BatchwiseGate out;
  if (training) {
    // Each expert keeps its m = k R / n best rows (at least 1, at most R).
    const int64_t m = std::clamp<int64_t>((static_cast<int64_t>(k) * rows + n / 2) / n, 1, std::max<int64_t>(rows, 1));
    const TopK top = topk(transpose(probs, {1, 0}), m);  // [n, m]: rows chosen by each expert
    Expr tokens = flat(top.indices);
    // Row sums of G_sigma * M_batch: scatter the kept values back to rows.
    Expr kept_t = scatter_add_last(zeros_like_shape(g, Shape{n, rows}, probs.dtype()), top.indices, top.values);
    Expr denom = scale(sum(kept_t, 0), 1.f, 1e-20f);  // [R]
    Expr weight = column(top.values) / column(index_select(denom, tokens));
    out.routing = Routing{iota_index(g, n * m, m), weight, tokens, 1};
    // L = (1/R) sum (M_thr - M_batch) (X - T), eq. 20 per token, gradient to T only (docs/MODELS.md §3.10):
    // dL/dT_i = -(1/R) sum_j (M_thr - M_batch)_{j,i}, a difference of two shares of the batch, in [-1, 1].
    Expr batch_mask_t = scatter_add_last(zeros_like_shape(g, Shape{n, rows}, probs.dtype()), top.indices,
                                         scale(stop_gradient(top.values), 0.f, 1.f));
    Expr diff = threshold_mask(probs, thresholds) - stop_gradient(transpose(batch_mask_t, {1, 0}));
    const float per_row = rows > 0 ? static_cast<float>(1.0 / static_cast<double>(rows)) : 0.f;
    out.threshold_loss = scale(sum_all(stop_gradient(diff) * (stop_gradient(probs) - thresholds)), per_row);
  } else {
    // Eq. 19 first: G_sigma * M_thr is 0 below the thresholds and > 0 above (a softmax is positive), so
    // the top `cap` of it are the largest gates among the experts that passed, then zeros.
    const int cap = std::clamp(inference_k > 0 ? inference_k : 2 * k, 1, n);
    const TopK top = topk(probs * threshold_mask(probs, thresholds), cap);
    Expr weight = top.values / scale(sum(top.values, 1, true), 1.f, 1e-20f);
    out.routing = Routing{flat(top.indices), column(weight), Expr(), cap};
  }
  out.importance = expert_importance(out.routing, n);
  return out;
}

}  // namespace moe
