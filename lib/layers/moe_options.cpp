// MoeOptions (moe_ffn.h): the recipe keys of feed-forward type moe as one key table, and the checks
// across keys. Covered by tests/layers/moe_ffn_test.cpp (options cases).
#include "config/keys.h"
#include "layers/moe_ffn.h"

namespace moe {

namespace {
const config::Keys<MoeOptions>& moe_keys() {
  using config::at_least;
  static const config::Keys<MoeOptions> keys =
      config::Keys<MoeOptions>("ffn type moe")
          .accept("type", "moe")
          .add("experts", &MoeOptions::experts, "n, all experts (groups x experts per group when hierarchical)")
          .add("k", &MoeOptions::k, "experts per token (the primary k when hierarchical)")
          .add("hidden", &MoeOptions::hidden, "expert hidden width (default: model.ffn_dim)")
          .add("hidden_layers", &MoeOptions::hidden_layers, "ReLU hidden layers per expert (MoE-1-Deep: 4)")
          .add("w_importance", &MoeOptions::w_importance, "coefficient of CV(Importance)^2", at_least(0.f))
          .add("w_load", &MoeOptions::w_load, "coefficient of CV(Load)^2", at_least(0.f))
          .add("noisy", &MoeOptions::noisy, "noisy top-k (noise only in training)")
          .add("noise_epsilon", &MoeOptions::noise_epsilon, "sigma = softplus(x W_noise) + noise_epsilon",
               at_least(0.f))
          .add("groups", &MoeOptions::groups, "> 1: hierarchical, groups of experts / groups experts")
          .add("k_secondary", &MoeOptions::k_secondary, "k inside a group (hierarchical)")
          .add("gating", &MoeOptions::gating, "noisy top-k, or strictly balanced batchwise gating")
          .add("batchwise_inference_k", &MoeOptions::batchwise_inference_k,
               "batchwise inference: of the experts above their thresholds, at most this many per token, the largest "
               "gates (0: 2k; experts: no cap)")
          .add("expert_bias", &MoeOptions::expert_bias, "biases in the expert layers (t2t: none)")
          .add("autoscale", &MoeOptions::autoscale, "t2t: scale a layer by (in / d)^-1/2 when its input width != d")
          .add("experts_per_rank", &MoeOptions::experts_per_rank,
               "> 0: expert parallelism over experts / experts_per_rank ranks")
          .add_custom(
              "activation", config::ValueType::String, "accepted for the FFN-site convention: the experts are ReLU",
              [](const YAML::Node& v, MoeOptions&, const std::string& key) {
                MOE_CHECK(v.IsScalar() && v.Scalar() == "relu", key, ": the MoE experts use relu, not '", YAML::Dump(v),
                          "'");
              },
              [](const MoeOptions&) { return YAML::Node("relu"); });
  return keys;
}
}  // namespace

MoeOptions moe_options_from_yaml(const YAML::Node& node, int64_t dim, int64_t default_hidden) {
  MoeOptions o;
  o.dim = dim;
  o.hidden = default_hidden;
  moe_keys().read(node, o, "model.ffn");
  validate(o);
  return o;
}

void validate(const MoeOptions& o) {
  MOE_CHECK(o.dim >= 1 && o.hidden >= 1 && o.hidden_layers >= 1, "moe: dim ", o.dim, ", hidden ", o.hidden,
            " and hidden_layers ", o.hidden_layers, " must be >= 1");
  MOE_CHECK(o.experts >= 1, "moe: experts = ", o.experts, " must be >= 1");
  MOE_CHECK(o.experts_per_rank >= 0 && (o.experts_per_rank == 0 || o.experts % o.experts_per_rank == 0),
            "moe: experts_per_rank = ", o.experts_per_rank, " must divide experts = ", o.experts);
  MOE_CHECK(o.w_importance >= 0 && o.w_load >= 0 && o.noise_epsilon >= 0, "moe: w_importance ", o.w_importance,
            ", w_load ", o.w_load, " and noise_epsilon ", o.noise_epsilon, " must be >= 0");
  MOE_CHECK(o.batchwise_inference_k >= 0 && o.batchwise_inference_k <= o.experts,
            "moe: batchwise_inference_k = ", o.batchwise_inference_k, " must be in [0, experts = ", o.experts,
            "] (0: 2k)");
  if (o.groups > 1) {
    MOE_CHECK(o.gating == MoeGating::noisy_topk, "moe: hierarchical MoE (groups ", o.groups,
              ") needs gating noisy_topk");
    MOE_CHECK(o.experts % o.groups == 0, "moe: experts = ", o.experts, " is not a multiple of groups = ", o.groups);
    MOE_CHECK(o.k >= 1 && o.k <= o.groups, "moe: k = ", o.k, " must be in [1, groups = ", o.groups, "]");
    MOE_CHECK(o.k_secondary >= 1 && o.k_secondary <= o.experts / o.groups, "moe: k_secondary = ", o.k_secondary,
              " must be in [1, ", o.experts / o.groups, "] (experts per group)");
  } else {
    MOE_CHECK(o.k >= 1 && o.k <= o.experts, "moe: k = ", o.k, " must be in [1, experts = ", o.experts, "]");
  }
}

}  // namespace moe
