// Router batchwise: the sparsely-gated MoE paper's strictly balanced gating (Shazeer et al. 2017, App. F;
// docs/MODELS.md §3.10; the gate itself: batchwise_gate in moe_ffn_gating.h). Training: each expert takes
// the k|X|/n rows of the batch with its largest softmax gates (RoutingScope::batch: every token of the
// batch moves every other's routing), plus the threshold loss (eq. 20, per token) "<site>.batchwise_threshold";
// inference: the gates above learned per-expert thresholds (eq. 19), at most batchwise_inference_k per
// token (RoutingScope::token). W_g starts Glorot-uniform (zeros would give every expert the same rows).
// Covered by tests/layers/moe_ffn_test.cpp and tests/layers/moe_batchwise_test.cpp.
#include <algorithm>

#include "graph/expr/cast.h"
#include "graph/expr/matmul.h"
#include "layers/moe_ffn.h"

namespace moe {

namespace {
struct NoKeys {};
const config::Keys<NoKeys>& no_keys() {
  static const config::Keys<NoKeys> keys("router batchwise");
  return keys;
}

int inference_cap(const MoeOptions& o) {
  return std::clamp(o.batchwise_inference_k > 0 ? o.batchwise_inference_k : 2 * o.k, 1, o.experts);
}

class BatchwiseRouter : public MoeRouter {
 public:
  explicit BatchwiseRouter(const NoKeys&) {}
  const std::string& name() const override {
    static const std::string n = "batchwise";
    return n;
  }
  RouterTraits traits(const MoeOptions& o) const override {
    RouterTraits t;
    t.training = RoutingScope::batch;
    t.token_choice = false;
    t.max_per_token = inference_cap(o);
    return t;
  }
  void validate(const MoeOptions& o) const override {
    MOE_CHECK(o.groups <= 1, "moe: hierarchical MoE (groups ", o.groups, ") needs gating noisy_topk");
    MOE_CHECK(o.k >= 1 && o.k <= o.experts, "moe: k = ", o.k, " must be in [1, experts = ", o.experts, "]");
  }
  RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const override {
    RouterWeights w;
    w["gate.w"] = cast(b.param("gate.w", Shape{o.dim, o.experts}, Init::glorot_uniform()), gate_dtype);
    w["gate.thresholds"] = cast(b.param("gate.thresholds", Shape{o.experts}, Init::zeros()), gate_dtype);
    return w;
  }
  RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                     const RouterContext& c) const override {
    RouterResult r;
    const Expr logits = matmul(xg, w.at("gate.w"));
    const BatchwiseGate gate =
        batchwise_gate(logits, w.at("gate.thresholds"), o.k, c.training, o.batchwise_inference_k);
    r.routing = gate.routing;
    r.importance = gate.importance;
    r.logits = {logits};
    if (gate.threshold_loss.defined()) r.losses.push_back({"batchwise_threshold", gate.threshold_loss});
    return r;
  }
};
}  // namespace

RouterFamily batchwise_router() {
  return router_family<NoKeys, BatchwiseRouter>(
      "batchwise",
      "strictly balanced gating (2017, App. F): in training each expert takes the k|X|/n tokens of the batch with "
      "its largest gates; at inference learned thresholds (key batchwise_inference_k above); decoder-only LMs refuse "
      "it",
      &no_keys);
}

}  // namespace moe
