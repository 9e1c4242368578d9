// Feed-forward type moe (moe_ffn.h) as a site family: the options parsed once per model (hidden
// defaults to the model's FFN width); with moe_every > 1 the site is the model's dense FFN in the layers
// between its MoE layers (GShard, Switch: every other layer). It describes its routed experts per layer
// (RoutedSite: the router, E, experts per token, the expert parameters, the RoutingScope in training and
// inference, a token capacity making it `earlier`) for the dry run, the expert report and the models'
// causality checks; --help lists its keys and every router's. `gating` may name a router per role
// ({encoder: expert_choice, decoder: switch}), each site then routing with its role's. Covered by
// tests/layers/moe_ffn_test.cpp, tests/layers/moe_router_test.cpp and tests/layers/sites_test.cpp.
#include "layers/moe_ffn.h"
#include "layers/sites.h"

namespace moe {

namespace {
class MoeFfnSite : public FfnSite {
 public:
  MoeFfnSite(MoeOptions o, const FfnShape& dense) : dense_(dense) {
    for (FfnRole role : {FfnRole::encoder, FfnRole::decoder, FfnRole::lm}) roles_.push_back(at_role(o, role));
  }

  Expr build(const Builder& b, const Expr& x, const FfnInput& in) const override {
    if (!moe_at(in.layer))
      return feed_forward(b, x, dense_.dim, dense_.hidden, dense_.activation, dense_.activation_dropout);
    return moe_ffn(b, x, at(in.role), reads_padding(in.role) ? in.padding : Tensor());
  }

  std::optional<RoutedSite> routed(FfnRole role, int layer) const override {
    if (!moe_at(layer)) return std::nullopt;
    const MoeOptions& o_ = at(role);
    const RouterTraits t = o_.router->traits(o_);
    RoutedSite s;
    s.router = o_.router->name();
    s.router_key = "gating";
    s.experts = o_.experts;
    s.active = o_.router->active(o_);
    s.shared = o_.shared;
    for (int l = 0; l <= o_.hidden_layers; ++l) {
      s.expert_params.push_back("expert.w" + std::to_string(l));
      if (o_.expert_bias) s.expert_params.push_back("expert.b" + std::to_string(l));
    }
    s.experts_per_rank = o_.experts_per_rank;
    // A token capacity lets earlier tokens of the rows fill an expert first.
    auto with_capacity = [](RoutingScope scope, float factor) {
      return factor > 0 && scope == RoutingScope::token ? RoutingScope::earlier : scope;
    };
    s.training = with_capacity(t.training, o_.capacity_factor);
    s.inference = with_capacity(t.inference, o_.eval_capacity_factor);
    return s;
  }

  bool reads_padding(FfnRole role) const override { return at(role).router->traits(at(role)).reads_padding; }

 private:
  /// The options at `role` (gating may name a router per role).
  const MoeOptions& at(FfnRole role) const { return roles_[static_cast<size_t>(role)]; }

  /// Whether layer `layer` is an MoE layer (-1: a layer the model places itself).
  bool moe_at(int layer) const {
    if (layer < 0) {
      MOE_CHECK(roles_[0].moe_every == 1, "moe_every ", roles_[0].moe_every,
                ": the LSTM models place their MoE layers themselves (model.moe_after, encoder_moe_after, "
                "decoder_moe_after); leave moe_every at 1 there");
      return true;
    }
    return (layer + 1) % roles_[0].moe_every == 0;
  }

  std::vector<MoeOptions> roles_;  // by FfnRole
  FfnShape dense_;
};
}  // namespace

FfnFamily moe_ffn_family() {
  return {"moe",
          [](const YAML::Node& options, const FfnShape& shape) -> std::unique_ptr<FfnSite> {
            return std::make_unique<MoeFfnSite>(moe_options_from_yaml(options, shape.dim, shape.hidden), shape);
          },
          &moe_keys_help};
}

}  // namespace moe
