// transformer_lm_config.h implementation: the key table and the checks across keys (final_norm defaults
// to pre_norm). Covered by tests/models/transformer_lm_test.cpp and tests/training/lm_options_test.cpp.
#include "models/transformer_lm_config.h"

#include "layers/sites.h"
#include "models/config_keys.h"

namespace moe {

const config::Keys<TransformerLmConfig>& TransformerLmConfig::keys() {
  using C = TransformerLmConfig;
  static const config::Keys<C> k = [] {
    config::Keys<C> k("a transformer_lm / transformer_mlm");
    k.add_custom(
        "type", config::ValueType::String, "transformer_lm, or transformer_mlm (bidirectional, masked LM)",
        [](const YAML::Node& v, C& c, const std::string&) { c.causal = v.Scalar() != "transformer_mlm"; },
        [](const C& c) { return YAML::Node(c.causal ? "transformer_lm" : "transformer_mlm"); });
    k.add("vocab", &C::vocab, "vocabulary size (filled in from the vocabulary)").internal();
    model_keys::add_special_ids(k);
    model_keys::add_widths(k);
    k.add("layers", &C::layers, "language models: layers (lstm_lm default 2)", config::at_least(0));
    k.add("pre_norm", &C::pre_norm, "pre-norm residual blocks (false: post-norm)");
    k.add("final_norm", &C::final_norm, "transformer_lm: layer norm after the last layer (default: pre_norm)");
    k.add("positions", &C::positions, "transformer_lm: position encodings");
    k.add("tie_embeddings", &C::tie_embeddings, "output matrix = input embedding (or tied adaptive weights)");
    model_keys::add_embedding_and_dropout(k);
    k.add("adaptive_input_cutoffs", &C::adaptive_input_cutoffs,
          "transformer_lm: adaptive input bands (empty = plain embedding)");
    k.add("adaptive_softmax_cutoffs", &C::adaptive_softmax_cutoffs,
          "language models: adaptive softmax bands (empty = full softmax)");
    k.add("adaptive_input_factor", &C::adaptive_input_factor, "adaptive input: width divisor per band");
    k.add("adaptive_softmax_factor", &C::adaptive_softmax_factor, "adaptive softmax: width divisor per band");
    k.add("adaptive_softmax_dropout", &C::adaptive_softmax_dropout, "adaptive softmax: tail dropout");
    k.add("tie_adaptive_proj", &C::tie_adaptive_proj, "transformer_lm: tail projections = adaptive input's");
    model_keys::add_sites(k);
    return k;
  }();
  return k;
}

TransformerLmConfig TransformerLmConfig::from_yaml(const YAML::Node& node) {
  TransformerLmConfig c;
  keys().read(node, c, "model");
  if (!node || !node.IsMap() || !node["final_norm"]) c.final_norm = c.pre_norm;
  SiteRegistry::instance().pin(c.attention);  // the stored architecture names the defaults it was trained with
  MOE_CHECK(c.d_model % c.heads == 0, "model.d_model (", c.d_model, ") must be divisible by model.heads (", c.heads,
            ")");
  if (c.tie_embeddings && (c.adaptive_input() || c.adaptive_softmax()))
    MOE_CHECK(
        c.adaptive_input_cutoffs == c.adaptive_softmax_cutoffs && c.adaptive_input_factor == c.adaptive_softmax_factor,
        "model.tie_embeddings with adaptive input/softmax needs equal cutoffs and factors on both sides");
  return c;
}

YAML::Node TransformerLmConfig::to_yaml() const { return keys().write(*this); }

}  // namespace moe
