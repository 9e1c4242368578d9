// Router noisy_topk: the sparsely-gated MoE paper's noisy top-k gate (Shazeer et al. 2017, §2.1, App. A;
// docs/MODELS.md §3.2-3.5), flat or, with groups > 1, hierarchical (App. B, §3.8):
//   H = x W_g + eps * (softplus(x W_noise) + noise_epsilon)   (eps ~ N(0, 1) in training when noisy)
//   G = softmax over the top k of H, 0 elsewhere; importance = sum_x G(x), load = the smooth estimator.
// W_g = W_noise = 0 at the start (§3.5). Its keys are the common noisy, noise_epsilon, groups, k_secondary,
// w_importance and w_load (moe_options.cpp). Routing per token (RoutingScope::token); flat top-k takes a
// token capacity. Covered by tests/layers/moe_ffn_test.cpp and tests/layers/moe_router_test.cpp.
#include "graph/expr/cast.h"
#include "graph/expr/matmul.h"
#include "layers/moe_ffn.h"
#include "layers/moe_ffn_hierarchical.h"

namespace moe {

namespace {
struct NoKeys {};
const config::Keys<NoKeys>& no_keys() {
  static const config::Keys<NoKeys> keys("router noisy_topk");
  return keys;
}

class NoisyTopkRouter : public MoeRouter {
 public:
  explicit NoisyTopkRouter(const NoKeys&) {}
  const std::string& name() const override {
    static const std::string n = "noisy_topk";
    return n;
  }
  std::string policy(const MoeOptions& o) const override { return o.groups > 1 ? "hierarchical_topk" : name(); }
  RouterTraits traits(const MoeOptions& o) const override {
    RouterTraits t;
    t.token_choice = o.groups <= 1;  // hierarchical assignments come sorted by group
    t.max_per_token = static_cast<int>(active(o));
    return t;
  }
  double active(const MoeOptions& o) const override { return o.groups > 1 ? o.k * o.k_secondary : o.k; }
  void validate(const MoeOptions& o) const override {
    if (o.groups > 1) {
      MOE_CHECK(o.experts % o.groups == 0, "moe: experts = ", o.experts, " is not a multiple of groups = ", o.groups);
      MOE_CHECK(o.k >= 1 && o.k <= o.groups, "moe: k = ", o.k, " must be in [1, groups = ", o.groups, "]");
      MOE_CHECK(o.k_secondary >= 1 && o.k_secondary <= o.experts / o.groups, "moe: k_secondary = ", o.k_secondary,
                " must be in [1, ", o.experts / o.groups, "] (experts per group)");
      MOE_CHECK(o.capacity_factor == 0 && o.eval_capacity_factor == 0,
                "moe: capacity_factor: the hierarchical MoE (groups ", o.groups, ") takes no token capacity");
    } else {
      MOE_CHECK(o.k >= 1 && o.k <= o.experts, "moe: k = ", o.k, " must be in [1, experts = ", o.experts, "]");
    }
  }
  RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const override {
    const bool hier = o.groups > 1;
    const int64_t d = o.dim, first = hier ? o.groups : o.experts;
    auto param = [&](const std::string& leaf, const Shape& shape) {
      return cast(b.param(leaf, shape, Init::zeros()), gate_dtype);  // W_g = W_noise = 0 (§3.5)
    };
    RouterWeights w;
    w["gate.w"] = param("gate.w", Shape{d, first});
    if (o.noisy) w["gate.noise_w"] = param("gate.noise_w", Shape{d, first});  // declared in every mode (checkpoints)
    if (hier) {
      const int64_t per = o.experts / o.groups;
      w["gate2.w"] = param("gate2.w", Shape{o.groups, d, per});
      if (o.noisy) w["gate2.noise_w"] = param("gate2.noise_w", Shape{o.groups, d, per});
    }
    return w;
  }
  void draw_noise(Graph& g, const MoeOptions& o, bool training, RouterContext& c) const override {
    const bool on = training && o.noisy, hier = o.groups > 1;
    c.noise = GateNoise{on, g.seed(), on ? g.next_rng_stream() : 0};
    c.noise2 = GateNoise{on && hier, g.seed(), on && hier ? g.next_rng_stream() : 0};
  }
  RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                     const RouterContext& c) const override {
    auto at = [&w](const char* leaf) {
      const auto it = w.find(leaf);
      return it == w.end() ? Expr() : it->second;
    };
    RouterResult r;
    if (o.groups > 1) {
      if (o.z_loss > 0) r.logits = {matmul(xg, at("gate.w"))};  // the primary gate's
      const HierarchicalGate gate =
          hierarchical_gate(xg, at("gate.w"), at("gate.noise_w"), at("gate2.w"), at("gate2.noise_w"), o.k,
                            o.k_secondary, c.noise, c.noise2, o.noise_epsilon, c.training);
      r.routing = gate.routing;
      r.importance = gate.importance;
      r.load = gate.load;
      return r;
    }
    const Expr clean = matmul(xg, at("gate.w"));
    r.logits = {clean};
    const TopKGate gate = noisy_top_k_gate(clean, c.noise.enabled ? matmul(xg, at("gate.noise_w")) : Expr(), o.k,
                                           c.noise, o.noise_epsilon, c.training);
    r.routing = top_k_routing(gate);
    r.importance = expert_importance(r.routing, o.experts);
    r.load = gate.load;
    return r;
  }
};
}  // namespace

RouterFamily noisy_topk_router() {
  return router_family<NoKeys, NoisyTopkRouter>(
      "noisy_topk",
      "the sparsely-gated MoE paper's noisy top-k (flat, or hierarchical with groups > 1); keys noisy, "
      "noise_epsilon, groups, k_secondary, w_importance, w_load above",
      &no_keys);
}

}  // namespace moe
