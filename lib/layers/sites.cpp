// sites.h implementation: the registry, the routing check and the families' help. Covered by
// tests/layers/sites_test.cpp.
#include "layers/sites.h"

#include "common/error.h"

namespace moe {

namespace {
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

void AttentionSite::fill_cross_cache(const Builder& b, const Expr& memory, const Tensor& memory_padding,
                                     KVCache& cache) const {
  AttentionInput in{memory, memory, memory_padding, false, false, &cache, Tensor(), Expr()};
  project_heads(b, in, shape_.dim, shape_.heads, shape_.heads);
}

SiteRegistry& SiteRegistry::instance() {
  static SiteRegistry* registry = [] {
    auto* r = new SiteRegistry();
    register_builtin_sites(*r);
    return r;
  }();
  return *registry;
}

void SiteRegistry::add(AttentionFamily family) {
  for (const auto& f : attention_)
    MOE_CHECK(f.name != family.name, "attention type '", family.name, "' registered twice");
  attention_.push_back(std::move(family));
}

void SiteRegistry::add(FfnFamily family) {
  for (const auto& f : ffn_) MOE_CHECK(f.name != family.name, "feed-forward type '", family.name, "' registered twice");
  ffn_.push_back(std::move(family));
}

std::string site_type(const YAML::Node& options, const char* fallback) {
  if (!options || !options.IsMap() || !options["type"]) return fallback;
  MOE_CHECK(options["type"].IsScalar(), "type: expected a name, got '", YAML::Dump(options["type"]), "'");
  return options["type"].Scalar();
}

std::shared_ptr<const AttentionSite> SiteRegistry::attention(const YAML::Node& options,
                                                             const AttentionShape& shape) const {
  const std::string type = site_type(options, "mha");
  for (const auto& f : attention_)
    if (f.name == type) return f.make(options, shape);
  MOE_FAIL("model.attention.type: unknown attention type '", type, "' (known: ", joined(attention_types()), ")");
}

std::shared_ptr<const FfnSite> SiteRegistry::ffn(const YAML::Node& options, const FfnShape& shape,
                                                 const std::string& fallback) const {
  const std::string type = site_type(options, fallback.c_str());
  for (const auto& f : ffn_)
    if (f.name == type) return f.make(options, shape);
  MOE_FAIL("model.ffn.type: unknown feed-forward type '", type, "' (known: ", joined(ffn_types()), ")");
}

void SiteRegistry::pin(YAML::Node& options) const {
  const std::string type = site_type(options, "mha");
  for (const auto& f : attention_)
    if (f.name == type && f.pin) f.pin(options);
}

std::vector<std::string> SiteRegistry::attention_types() const {
  std::vector<std::string> out;
  for (const auto& f : attention_) out.push_back(f.name);
  return out;
}

std::string SiteRegistry::help_text() const {
  std::string out;
  for (const auto& f : ffn_)
    if (f.help) out += f.help();
  return out;
}

void check_routing(const RoutedSite& s, FfnRole role, const std::string& key, const std::string& model) {
  if (role == FfnRole::encoder) return;
  const bool training = sees_later(s.training), inference = sees_later(s.inference);
  if (role == FfnRole::lm) {
    MOE_CHECK(!training && !inference, key, ": ", s.router, " lets a token's routing depend on later tokens of its ",
              "sequence (", inference ? "in training and at inference" : "in training", "); ", model,
              " predicts each token from the ones before it and must not see them. Use a router that routes each ",
              "token on its own or from earlier tokens only (moe-train --help lists them), or this one in an ",
              "encoder or a transformer_mlm");
    return;
  }
  MOE_CHECK(!inference, key, ": ", s.router, " routes a decoder token by later tokens of its sentence at inference, ",
            "which incremental decoding never has; ", model,
            " cannot use it in its decoder (use it in the encoder: ", "see moe-train --help)");
}

void add_routed_ffn(std::vector<ModelRoutedSite>& out, const FfnSite& ffn, FfnRole role, int layer,
                    const std::string& prefix, const std::string& key, const std::string& model) {
  const std::optional<RoutedSite> s = ffn.routed(role, layer);
  if (!s) return;
  check_routing(*s, role, s->router_key.empty() ? key : key + "." + s->router_key, model);
  out.push_back(ModelRoutedSite{prefix, key, role, *s});
}

std::vector<std::string> SiteRegistry::ffn_types() const {
  std::vector<std::string> out;
  for (const auto& f : ffn_) out.push_back(f.name);
  return out;
}

}  // namespace moe
