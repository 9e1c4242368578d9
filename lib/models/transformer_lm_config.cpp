// transformer_lm_config.h implementation: the key table and the checks across keys (final_norm defaults
// to pre_norm). Covered by tests/models/transformer_lm_test.cpp and tests/training/lm_options_test.cpp.
#include "models/transformer_lm_config.h"

#include "layers/sites.h"

namespace moe {

const config::Keys<TransformerLmConfig>& TransformerLmConfig::keys() {
  using C = TransformerLmConfig;
  using config::at_least;
  static const config::Keys<C> k =
      config::Keys<C>("a transformer_lm / transformer_mlm")
          .add_custom(
              "type", config::ValueType::String, "transformer_lm, or transformer_mlm (bidirectional, masked LM)",
              [](const YAML::Node& v, C& c, const std::string&) { c.causal = v.Scalar() != "transformer_mlm"; },
              [](const C& c) { return YAML::Node(c.causal ? "transformer_lm" : "transformer_mlm"); })
          .add("vocab", &C::vocab, "vocabulary size (filled in from the vocabulary)")
          .internal()
          .add("pad_id", &C::pad_id, "<pad> id")
          .internal()
          .add("bos_id", &C::bos_id, "<s> id")
          .internal()
          .add("eos_id", &C::eos_id, "</s> id")
          .internal()
          .add("d_model", &C::d_model, "model width", at_least<int64_t>(1))
          .add("ffn_dim", &C::ffn_dim, "feed-forward inner width", at_least<int64_t>(1))
          .add("heads", &C::heads, "attention heads", at_least(1))
          .add("layers", &C::layers, "language models: layers (lstm_lm default 2)", at_least(0))
          .add("pre_norm", &C::pre_norm, "pre-norm residual blocks (false: post-norm)")
          .add("final_norm", &C::final_norm, "transformer_lm: layer norm after the last layer (default: pre_norm)")
          .add("positions", &C::positions, "transformer_lm: position encodings")
          .add("tie_embeddings", &C::tie_embeddings, "output matrix = input embedding (or tied adaptive weights)")
          .add("scale_embeddings", &C::scale_embeddings, "multiply embeddings by sqrt(d_model)")
          .add("dropout", &C::dropout, "dropout on embeddings and residual branches")
          .add("activation_dropout", &C::activation_dropout, "dropout after the feed-forward activation")
          .add("activation", &C::activation, "feed-forward activation")
          .add("max_positions", &C::max_positions, "longest sequence", at_least<int64_t>(1))
          .add("adaptive_input_cutoffs", &C::adaptive_input_cutoffs,
               "transformer_lm: adaptive input bands (empty = plain embedding)")
          .add("adaptive_softmax_cutoffs", &C::adaptive_softmax_cutoffs,
               "language models: adaptive softmax bands (empty = full softmax)")
          .add("adaptive_input_factor", &C::adaptive_input_factor, "adaptive input: width divisor per band")
          .add("adaptive_softmax_factor", &C::adaptive_softmax_factor, "adaptive softmax: width divisor per band")
          .add("adaptive_softmax_dropout", &C::adaptive_softmax_dropout, "adaptive softmax: tail dropout")
          .add("tie_adaptive_proj", &C::tie_adaptive_proj, "transformer_lm: tail projections = adaptive input's")
          .add("attention", &C::attention, "attention variant: {type: mha | mae | moa, ...its options}")
          .add("ffn", &C::ffn, "feed-forward variant: {type: dense | moe, ...its options}");
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
