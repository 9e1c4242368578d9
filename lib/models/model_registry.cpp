// model_registry.h implementation, and the default implementations of Model (errors for the loss of the
// other task; the Transformers' site types).
// Covered by tests/models/model_registry_test.cpp.
#include "models/model_registry.h"

#include "common/error.h"
#include "layers/sites.h"

namespace moe {

Expr Model::loss(const Builder&, const data::Batch&, float) const {
  MOE_FAIL("model type '", type(), "' is a language model: it has no translation loss");
}

Expr Model::lm_loss(const Builder&, const data::LmBatch&, float) const {
  MOE_FAIL("model type '", type(), "' is a translation model: it has no language-model loss");
}

std::string Model::site_types() const {
  const YAML::Node c = config_yaml();
  return "attention " + site_type(c["attention"], "mha") + ", ffn " + site_type(c["ffn"], "dense");
}

std::string future_warning(const Model& model, const std::string& what) {
  std::string out;
  const std::vector<std::string> sites = model.future_sites();
  if (!sites.empty()) {
    std::string list;
    for (const std::string& r : sites) list += (list.empty() ? "" : ", ") + r;
    out = "the MAE gates at " + list + " read full_mean (model.attention.gate_input, e.g. the preset paper): " + what +
          " see future target tokens through them, which incremental decoding never does (it reads the prefix "
          "mean), so they look better than the model that translates; gate_input: leak_free (the default) keeps "
          "these gates causal";
  }
  // Routed decoder sites whose training routing sees later tokens (the models refuse it at inference).
  std::string routed, key, router;
  for (const ModelRoutedSite& s : model.routed_sites())
    if (s.role != FfnRole::encoder && sees_later(s.site.training)) {
      routed += (routed.empty() ? "" : ", ") + s.prefix;
      key = s.key + (s.site.router_key.empty() ? "" : "." + s.site.router_key);
      router = s.site.router;
    }
  if (!routed.empty())
    out += (out.empty() ? "" : "; ") + key + " " + router + " routes the decoder tokens of " + routed +
           " by the whole batch in training (docs/MODELS.md §3.10): " + what +
           " see later target tokens through it in training graphs, which decoding never does (inference graphs "
           "route each token on its own)";
  return out;
}

ModelRegistry& ModelRegistry::instance() {
  static ModelRegistry* registry = [] {
    auto* r = new ModelRegistry();
    register_builtin_models(*r);
    return r;
  }();
  return *registry;
}

void ModelRegistry::add(ModelType type) {
  MOE_CHECK(!find(type.name), "model type '", type.name, "' registered twice");
  types_.push_back(std::move(type));
}

const ModelType* ModelRegistry::find(const std::string& name) const {
  for (const auto& t : types_)
    if (t.name == name) return &t;
  return nullptr;
}

const ModelType& ModelRegistry::at(const std::string& name) const {
  if (const ModelType* t = find(name)) return *t;
  std::string known;
  for (const auto& t : types_) known += (known.empty() ? "" : ", ") + t.name;
  MOE_FAIL("model.type: unknown model type '", name, "' (known: ", known, ")");
}

std::string model_type_of(const YAML::Node& model) {
  return model && model.IsMap() && model["type"] ? model["type"].as<std::string>() : "transformer";
}

std::unique_ptr<Model> create_model(const YAML::Node& model) {
  return ModelRegistry::instance().at(model_type_of(model)).create(model);
}

}  // namespace moe
