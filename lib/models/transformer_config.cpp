// transformer_config.h implementation: the key table and the checks across keys.
// Covered by tests/layers/transformer_test.cpp and tests/training/train_options_test.cpp.
#include "models/transformer_config.h"

#include "layers/sites.h"
#include "models/config_keys.h"

namespace moe {

const config::Keys<TransformerConfig>& TransformerConfig::keys() {
  using C = TransformerConfig;
  static const config::Keys<C> k = [] {
    config::Keys<C> k("a transformer");
    k.add_custom(
        "type", config::ValueType::String, "architecture (lib/models/builtin_models.cpp)",
        [](const YAML::Node&, C&, const std::string&) {}, [](const C&) { return YAML::Node("transformer"); });
    k.add("src_vocab", &C::src_vocab, "source vocabulary size (filled in from the vocabulary)").internal();
    k.add("tgt_vocab", &C::tgt_vocab, "target vocabulary size (filled in from the vocabulary)").internal();
    model_keys::add_special_ids(k);
    model_keys::add_widths(k);
    k.add("enc_layers", &C::enc_layers, "encoder layers", config::at_least(0));
    k.add("dec_layers", &C::dec_layers, "decoder layers", config::at_least(0));
    k.add("pre_norm", &C::pre_norm, "pre-norm residual blocks (false: post-norm)");
    k.add("tie_embeddings", &C::tie_embeddings,
          "transformer: which embeddings share the output matrix (all needs a joint vocabulary); language models: "
          "true | false");
    model_keys::add_embedding_and_dropout(k);
    model_keys::add_sites(k);
    return k;
  }();
  return k;
}

TransformerConfig TransformerConfig::from_yaml(const YAML::Node& node) {
  TransformerConfig c;
  keys().read(node, c, "model");
  SiteRegistry::instance().pin(c.attention);  // the stored architecture names the defaults it was trained with
  MOE_CHECK(c.d_model % c.heads == 0, "model.d_model (", c.d_model, ") must be divisible by model.heads (", c.heads,
            ")");
  return c;
}

YAML::Node TransformerConfig::to_yaml() const { return keys().write(*this); }

}  // namespace moe
