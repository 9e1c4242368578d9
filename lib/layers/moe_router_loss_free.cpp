// Router loss_free: load balancing without an auxiliary loss (DeepSeek-V3, 2024, §2.1.2 eq. 12-16;
// Wang et al. 2024, "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts"; docs/MODELS.md
// §3.17). Affinities s = sigmoid(x W_g) (score: softmax as DeepSeek-V2); a per-expert bias b, a state
// and no parameter, enters the choice of experts only:
//   experts(x) = the top k of s_i(x) + b_i,   gate_i = s_i / sum_{j chosen} s_j  (sigmoid; softmax: s_i),
// and after each training batch (each forward of a training graph, every rank with the same global load)
//   b_i <- b_i + bias_rate * sign(mean_j load_j - load_i),   load_i = assignments to i in the batch,
// so an overloaded expert is chosen less the next time. b lives in checkpoints ("<site>.gate.bias") and
// routes at inference too. Routing per token (RoutingScope::token: b is fixed within a batch); a token
// capacity applies. W_g ~ N(0, 0.1 / d). Covered by tests/layers/moe_router_test.cpp ("loss_free") and
// tests/gpu/moe_routers_parity_test.cpp.

#include "dist/collective_exprs.h"
#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "graph/expr/unary.h"
#include "layers/moe_ffn.h"
#include "layers/moe_router_flat.h"
#include "ops/optimizer.h"

namespace moe {

namespace {
MOE_NAMED_ENUM(AffinityScore, sigmoid, softmax)

struct LossFreeKeys {
  float bias_rate = 0.001f;  // gamma, the bias update speed (DeepSeek-V3: 0.001)
  AffinityScore score = AffinityScore::sigmoid;
};
const config::Keys<LossFreeKeys>& loss_free_keys() {
  static const config::Keys<LossFreeKeys> keys =
      config::Keys<LossFreeKeys>("router loss_free")
          .add("bias_rate", &LossFreeKeys::bias_rate,
               "loss_free: the bias update speed gamma, b_i += gamma sign(mean load - load_i) per training batch "
               "(DeepSeek-V3: 0.001)",
               config::at_least(0.f))
          .add("score", &LossFreeKeys::score, "loss_free: the affinity s (DeepSeek-V3: sigmoid)");
  return keys;
}

/// b <- b - rate * sign(load - mean load), in place, when the training graph runs forward.
void step_bias(const Expr& bias_state, const Expr& load, float rate) {
  Graph& g = load.graph();
  const int64_t n = load.shape().numel();
  const Expr zeros = g.input(Tensor::zeros(Shape{n}, load.dtype(), g.device()));
  const Expr over = reshape(load - mean(load, 0, true), {1, n});  // load_i - mean
  const Expr sign =
      cast(reshape(threshold_mask(over, zeros) - threshold_mask(scale(over, -1.f), zeros), {n}), DType::f32);
  g.add("moe_bias_update", Shape{n}, DType::f32, {bias_state, sign}, [rate](Node& node) {
    sgd_update(node.in(0), node.in(1), Tensor(), rate, 0.f, 0.f, false);
    node.val = node.in(0);
  });
}

class LossFreeRouter : public MoeRouter {
 public:
  explicit LossFreeRouter(const LossFreeKeys& k) : k_(k) {}
  const std::string& name() const override {
    static const std::string n = "loss_free";
    return n;
  }
  RouterTraits traits(const MoeOptions& o) const override {
    RouterTraits t;
    t.max_per_token = o.k;
    return t;
  }
  void validate(const MoeOptions& o) const override {
    validate_flat_topk(o, name());
  }
  RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const override {
    return {{"gate.w", declare_linear_gate(b, o, gate_dtype)},
            {"gate.bias", b.state("gate.bias", Shape{o.experts}, Init::zeros())}};
  }
  RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                     const RouterContext& c) const override {
    RouterResult r;
    const Expr logits = matmul(xg, w.at("gate.w"));
    r.logits = {logits};
    const Expr s = k_.score == AffinityScore::sigmoid ? sigmoid(logits) : softmax(logits);  // [R, n]
    const Expr bias = w.at("gate.bias");  // f32 state [n], no gradient
    const TopK top = topk(s + cast(bias, s.dtype()), o.k);
    const Expr chosen = gather_last(s, top.indices);  // [R, k]
    const Expr gates = k_.score == AffinityScore::sigmoid ? chosen / sum(chosen, 1, true) : chosen;
    const int64_t m = top.indices.shape().numel();
    r.routing = Routing{reshape(top.indices, {m}), reshape(gates, {m, 1}), Expr(), o.k};
    if (c.training && k_.bias_rate > 0) {
      Expr load = expert_counts(r.routing.expert, o.experts, s.dtype());
      if (c.comm && c.comm->world() > 1) load = dist::all_reduce_sum(*c.comm, load);
      step_bias(bias, load, k_.bias_rate);
    }
    return r;
  }

 private:
  LossFreeKeys k_;
};
}  // namespace

RouterFamily loss_free_router() {
  return router_family<LossFreeKeys, LossFreeRouter>(
      "loss_free",
      "DeepSeek-V3's balancing without an auxiliary loss: a per-expert bias, stepped against the load after each "
      "training batch, chooses the experts; the gates ignore it",
      &loss_free_keys);
}

}  // namespace moe
