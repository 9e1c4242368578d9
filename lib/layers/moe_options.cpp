// MoeOptions (moe_ffn.h): the recipe keys of feed-forward type moe as one key table, the router's own
// keys beside them (`gating` names the router, whose family reads its keys: moe_router.h), the checks
// across keys, and the --help text of both. Covered by tests/layers/moe_ffn_test.cpp (options cases) and
// tests/layers/moe_router_test.cpp.
#include <fmt/format.h>

#include <cmath>

#include "config/keys.h"
#include "layers/moe_ffn.h"

namespace moe {

namespace {
/// The router of family `f` with its own keys taken from `node` (the MoE options map; may be null).
std::shared_ptr<const MoeRouter> make_router(const RouterFamily& f, const YAML::Node& node) {
  YAML::Node own(YAML::NodeType::Map);
  for (const std::string& k : f.keys)
    if (node && node.IsMap() && node[k]) own[k] = node[k];
  return f.make(own, "model.ffn");
}

/// The router named `v` (or the routers of a map by role), their own keys read from `node`.
void read_gating(const YAML::Node& v, MoeOptions& o, const std::string& key, const YAML::Node& node) {
  const RouterRegistry& reg = RouterRegistry::instance();
  if (v.IsScalar()) {
    o.router = make_router(reg.family(v.Scalar(), key), node);
    return;
  }
  MOE_CHECK(v.IsMap() && v.size() > 0, key, ": expected a router name or a map of routers by role, got '",
            YAML::Dump(v), "'");
  o.role_routers.clear();
  for (const auto& kv : v) {
    const std::string role_key = key + "." + kv.first.Scalar();
    const FfnRole role = parse_enum<FfnRole>(kv.first.Scalar(), role_key);
    MOE_CHECK(kv.second.IsScalar(), role_key, ": expected a router name, got '", YAML::Dump(kv.second), "'");
    o.role_routers[role] = make_router(reg.family(kv.second.Scalar(), role_key), node);
  }
  const auto encoder = o.role_routers.find(FfnRole::encoder);
  o.router = encoder != o.role_routers.end() ? encoder->second : make_router(reg.family("noisy_topk", key), node);
}

/// The router families a gating node names (a name, or a map of names by role).
std::vector<const RouterFamily*> named_families(const YAML::Node& node, const std::string& key) {
  const RouterRegistry& reg = RouterRegistry::instance();
  const YAML::Node g = node && node.IsMap() ? node["gating"] : YAML::Node();
  std::vector<const RouterFamily*> out;
  if (!g || g.IsNull() || g.IsScalar()) {
    out.push_back(&reg.family(g && g.IsScalar() ? g.Scalar() : "noisy_topk", key));
  } else if (g.IsMap()) {
    for (const auto& kv : g)
      if (kv.second.IsScalar()) out.push_back(&reg.family(kv.second.Scalar(), key + "." + kv.first.Scalar()));
  }
  return out;
}

const config::Keys<MoeOptions>& moe_keys() {
  using config::at_least;
  static const config::Keys<MoeOptions> keys =
      config::Keys<MoeOptions>("ffn type moe")
          .accept("type", "moe")
          .add("experts", &MoeOptions::experts, "n, all routed experts (groups x experts per group when hierarchical)")
          .add("k", &MoeOptions::k,
               "experts per token (the primary k when hierarchical; expert_choice: per token on average)")
          .add("hidden", &MoeOptions::hidden, "expert hidden width (default: model.ffn_dim)")
          .add("hidden_layers", &MoeOptions::hidden_layers, "ReLU hidden layers per expert (MoE-1-Deep: 4)")
          .add("w_importance", &MoeOptions::w_importance,
               "coefficient of CV(Importance)^2 (the 2017 routers: noisy_topk, batchwise)", at_least(0.f))
          .add("w_load", &MoeOptions::w_load, "coefficient of CV(Load)^2 (noisy_topk)", at_least(0.f))
          .add("noisy", &MoeOptions::noisy, "noisy_topk: noisy top-k (noise only in training)")
          .add("noise_epsilon", &MoeOptions::noise_epsilon, "noisy_topk: sigma = softplus(x W_noise) + noise_epsilon",
               at_least(0.f))
          .add("groups", &MoeOptions::groups,
               "noisy_topk: > 1 makes it hierarchical, groups of experts / groups experts")
          .add("k_secondary", &MoeOptions::k_secondary, "noisy_topk: k inside a group (hierarchical)")
          .add_custom(
              "gating", config::ValueType::String,
              "the router: " + RouterRegistry::instance().names() +
                  " (each below, with its own keys), or one per role: {encoder: expert_choice, decoder: switch} "
                  "(roles " +
                  enum_choices<FfnRole>() + "; those not named: noisy_topk)",
              [](const YAML::Node& v, MoeOptions& o, const std::string& key) { read_gating(v, o, key, {}); },
              [](const MoeOptions& o) { return YAML::Node(o.router->name()); })
          .add("batchwise_inference_k", &MoeOptions::batchwise_inference_k,
               "batchwise inference: of the experts above their thresholds, at most this many per token, the largest "
               "gates (0: 2k; experts: no cap)")
          .add("expert_bias", &MoeOptions::expert_bias, "biases in the expert layers (t2t: none)")
          .add("autoscale", &MoeOptions::autoscale, "t2t: scale a layer by (in / d)^-1/2 when its input width != d")
          .add("experts_per_rank", &MoeOptions::experts_per_rank,
               "> 0: expert parallelism over experts / experts_per_rank ranks")
          .add("capacity_factor", &MoeOptions::capacity_factor,
               "routers where tokens pick experts: > 0 caps each expert at ceil(f * rows * k / experts) (token, slot) "
               "pairs of the layer's rows in training, earlier tokens first; the rest pass through the residual "
               "(GShard, Switch; 0: dropless)",
               at_least(0.f))
          .add("eval_capacity_factor", &MoeOptions::eval_capacity_factor,
               "the same in inference graphs (0: none; > 0 makes decoding depend on the batch)", at_least(0.f))
          .add("z_loss", &MoeOptions::z_loss,
               "coefficient of the router z-loss mean (logsumexp of the logits)^2 (ST-MoE)", at_least(0.f))
          .add("shared", &MoeOptions::shared, "shared experts every token uses besides its routed ones (DeepSeekMoE)",
               at_least(0))
          .add("shared_hidden", &MoeOptions::shared_hidden, "the shared experts' hidden width (0: hidden)",
               at_least<int64_t>(0))
          .add("moe_every", &MoeOptions::moe_every,
               "Transformers: MoE in layers l (0-based) with (l + 1) % moe_every == 0, the model's dense FFN elsewhere",
               at_least(1))
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
  const std::string section = "model.ffn";
  // The common keys with the routers' own accepted beside them; then each router reads its own.
  config::Keys<MoeOptions> keys = moe_keys();
  for (const RouterFamily* f : named_families(node, section + ".gating"))
    for (const std::string& k : f->keys)
      if (!keys.find(k)) keys.accept(k, "router " + f->name);
  const YAML::Node gating = node && node.IsMap() ? node["gating"] : YAML::Node();
  YAML::Node common = node && node.IsMap() ? YAML::Clone(node) : node;
  if (gating && gating.IsMap()) common.remove("gating");  // a map by role: read below, not as a dotted key
  keys.read(common, o, section);
  read_gating(gating && !gating.IsNull() ? gating : YAML::Node("noisy_topk"), o, section + ".gating", node);
  validate(o);
  return o;
}

MoeOptions at_role(const MoeOptions& opt, FfnRole role) {
  MoeOptions o = opt;
  if (const auto it = opt.role_routers.find(role); it != opt.role_routers.end()) o.router = it->second;
  return o;
}

void validate(const MoeOptions& o) {
  MOE_CHECK(o.router, "moe: no router");
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
  MOE_CHECK(o.capacity_factor >= 0 && o.eval_capacity_factor >= 0 && o.z_loss >= 0 && std::isfinite(o.z_loss),
            "moe: capacity_factor ", o.capacity_factor, ", eval_capacity_factor ", o.eval_capacity_factor,
            " and z_loss ", o.z_loss, " must be >= 0");
  MOE_CHECK(o.shared >= 0 && o.shared_hidden >= 0 && o.moe_every >= 1, "moe: shared ", o.shared, " and shared_hidden ",
            o.shared_hidden, " must be >= 0, moe_every ", o.moe_every, " >= 1");
  std::vector<std::shared_ptr<const MoeRouter>> routers = {o.router};
  for (const auto& [role, r] : o.role_routers) routers.push_back(r);
  for (const auto& r : routers) {
    r->validate(o);
    if (o.capacity_factor > 0 || o.eval_capacity_factor > 0)
      MOE_CHECK(r->traits(o).token_choice, "moe: capacity_factor / eval_capacity_factor: gating ", r->name(),
                " lets experts pick their tokens, so no token capacity applies");
  }
}

std::string moe_keys_help() {
  auto render = [](const config::Schema& s, const std::string& title) {
    std::string out = "\n[" + title + "]\n";
    for (const auto& [name, k] : s.keys()) {
      const std::string value = k.type == config::ValueType::Float ? fmt::format("{:g}", k.default_value.as<double>())
                                                                   : YAML::Dump(k.default_value);
      out += "  " + name + " " + config::type_name(k.type) + " (default: " + value + ")\n";
      if (!k.help.empty()) out += "      " + k.help + "\n";
    }
    return out;
  };
  config::Schema common;
  MoeOptions defaults;
  defaults.hidden = 1024;
  moe_keys().declare(common, "", defaults);
  std::string out =
      render(common, "model.ffn: {type: moe, ...} (the LSTM models' model.moe: the same keys; docs/MODELS.md §3)");
  for (const RouterFamily& f : RouterRegistry::instance().families()) {
    config::Schema own;
    if (f.declare_keys) f.declare_keys(own, "");
    std::string block = render(own, "model.ffn.gating: " + f.name);
    block.insert(block.find(']') + 2, "  " + f.help + "\n");
    out += block;
  }
  return out;
}

}  // namespace moe
