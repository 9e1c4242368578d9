// MoE gates (docs/MODELS.md §3.2, §3.4, §3.10). Noisy top-k: H = clean + eps * (softplus(raw) + noise_eps),
// keep the top k of H, softmax over the kept logits; the load is the smooth estimator
// sum_x Phi((clean - kth_excluding(H, k, i)) / sigma) when noisy and k < n, else the true count.
// Batchwise (strictly balanced): each expert takes the k|X|/n rows with the largest softmax gates,
// gates renormalised per row; at inference, eq. 19: the gates above learned per-expert thresholds, of
// them at most a cap per row (the largest), renormalised.
// Covered by tests/layers/moe_ffn_test.cpp.
#pragma once
#include <cstdint>

#include "graph/graph.h"

namespace moe {

struct GateNoise {
  bool enabled = false;  // add N(0,1) * sigma to the logits (training)
  uint64_t seed = 0, stream = 0;
};

/// A list of (expert, token, weight) assignments for dispatch.
struct Routing {
  Expr expert;  // i32 [M]
  Expr weight;  // [M, 1] gate values (f32)
  Expr token;   // i32 [M]; undefined: assignment j belongs to token j / per_token
  int64_t per_token = 1;
};

struct TopKGate {
  Expr indices;  // i32 [R, k], experts by descending noisy logit
  Expr gates;    // [R, k], softmax over the kept logits
  Expr load;     // [n], smooth load (differentiable) or true count (no gradient)
  Expr prob;     // [R, n], P(x, i) of the smooth load (defined only when the load is smooth)
};

/// clean [R, n] = x W_g; raw_noise [R, n] = x W_noise (needed only when noise.enabled).
/// want_load: compute `load` (the smooth estimator or counts).
TopKGate noisy_top_k_gate(const Expr& clean, const Expr& raw_noise, int k, const GateNoise& noise,
                          float noise_epsilon, bool want_load);
/// The routing of a top-k gate: expert = indices flattened, weight = gates flattened, per_token = k.
Routing top_k_routing(const TopKGate& gate);
/// sum of gates per expert: index_add of the assignment weights, [n].
Expr expert_importance(const Routing& r, int n);
/// Assignments per expert (no gradient), [n], in `dtype`.
Expr expert_counts(const Expr& expert_ids, int n, DType dtype);
/// CV^2 = var / (mean^2 + 1e-10) with the population variance (t2t cv_squared); shape [].
Expr cv_squared(const Expr& v);

struct BatchwiseGate {
  Routing routing;
  Expr importance;      // [n]
  Expr threshold_loss;  // [] (training only): (1/R) sum (M_thr - M_batch) (X - T), gradient to T only
};
/// logits [R, n] (x W_g), thresholds [n] (learned T); training: batchwise top-(k R / n) per expert;
/// inference: the gates above T (eq. 19), of them the largest `inference_k` per row (0: 2k; n: all),
/// renormalised; a row with none above T gets no expert (zero weights).
BatchwiseGate batchwise_gate(const Expr& logits, const Expr& thresholds, int k, bool training, int inference_k);

}  // namespace moe
