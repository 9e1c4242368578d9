// transformer_config.h implementation: the key table and the checks across keys.
// Covered by tests/layers/transformer_test.cpp and tests/training/train_options_test.cpp.
#include "models/transformer_config.h"

#include "layers/sites.h"

namespace moe {

const config::Keys<TransformerConfig>& TransformerConfig::keys() {
  using C = TransformerConfig;
  using config::at_least;
  static const config::Keys<C> k =
      config::Keys<C>("a transformer")
          .add_custom(
              "type", config::ValueType::String, "architecture (lib/models/builtin_models.cpp)",
              [](const YAML::Node&, C&, const std::string&) {}, [](const C&) { return YAML::Node("transformer"); })
          .add("src_vocab", &C::src_vocab, "source vocabulary size (filled in from the vocabulary)")
          .internal()
          .add("tgt_vocab", &C::tgt_vocab, "target vocabulary size (filled in from the vocabulary)")
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
          .add("enc_layers", &C::enc_layers, "encoder layers", at_least(0))
          .add("dec_layers", &C::dec_layers, "decoder layers", at_least(0))
          .add("pre_norm", &C::pre_norm, "pre-norm residual blocks (false: post-norm)")
          .add("tie_embeddings", &C::tie_embeddings,
               "transformer: which embeddings share the output matrix (all needs a joint vocabulary); language "
               "models: true | false")
          .add("scale_embeddings", &C::scale_embeddings, "multiply embeddings by sqrt(d_model)")
          .add("dropout", &C::dropout, "dropout on embeddings and residual branches")
          .add("activation_dropout", &C::activation_dropout, "dropout after the feed-forward activation")
          .add("activation", &C::activation, "feed-forward activation")
          .add("max_positions", &C::max_positions, "longest sequence (sinusoidal positions)", at_least<int64_t>(1))
          .add("attention", &C::attention, "attention variant: {type: mha | mae | moa, ...its options}")
          .add("ffn", &C::ffn, "feed-forward variant: {type: dense | moe, ...its options}");
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
