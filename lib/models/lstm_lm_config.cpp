// LstmLmConfig (lstm_lm.h): the key table of model type lstm_lm and the checks across keys.
// Covered by tests/models/lstm_lm_test.cpp and tests/training/lm_options_test.cpp.
#include "models/config_keys.h"
#include "models/lstm_lm.h"

namespace moe {

const config::Keys<LstmLmConfig>& LstmLmConfig::keys() {
  using C = LstmLmConfig;
  using config::at_least;
  static const config::Keys<C> k = [] {
    config::Keys<C> k("an lstm_lm");
    model_keys::add_fixed_type(k, "lstm_lm");
    k.add("vocab", &C::vocab, "vocabulary size (filled in from the vocabulary)").internal();
    model_keys::add_special_ids(k);
    k.add("embed_dim", &C::embed_dim, "lstm_lm: embedding width", at_least<int64_t>(1))
        .add("hidden", &C::hidden, "lstm_lm: LSTM cells per layer", at_least<int64_t>(1))
        .add("projection", &C::projection, "lstm_lm: LSTM output projection (0 = none)", at_least<int64_t>(0))
        .add("layers", &C::layers, "lstm_lm: LSTM layers", at_least(1))
        .add("dropout", &C::dropout, "dropout after the embedding and every layer")
        .add("residual", &C::residual, "lstm_lm: residual connections where the widths agree")
        .add("moe_after", &C::moe_after, "lstm_lm: layers (0-based) followed by a mixture-of-experts layer")
        .add("moe", &C::moe, "lstm_lm: the mixture-of-experts layer's options ({type: moe, experts, k, hidden, ...})")
        .add("tie_embeddings", &C::tie_embeddings, "output matrix = input embedding (a full softmax only)")
        .add("adaptive_softmax_cutoffs", &C::adaptive_softmax_cutoffs, "adaptive softmax bands (empty = full)")
        .add("adaptive_softmax_factor", &C::adaptive_softmax_factor, "adaptive softmax: width divisor per band")
        .add("adaptive_softmax_dropout", &C::adaptive_softmax_dropout, "adaptive softmax: tail dropout")
        .add("sampled_softmax", &C::sampled_softmax,
             "lstm_lm: words sampled per training batch for an importance-sampled softmax (0 = the full softmax; "
             "validation and scoring always use the full softmax)",
             at_least<int64_t>(0));
    return k;
  }();
  return k;
}

LstmLmConfig LstmLmConfig::from_yaml(const YAML::Node& node) {
  LstmLmConfig c;
  keys().read(node, c, "model");
  for (int l : c.moe_after)
    MOE_CHECK(l >= 0 && l < c.layers, "model.moe_after: layer ", l, " is not in [0, ", c.layers, ")");
  MOE_CHECK(!c.tie_embeddings || c.out_dim() == c.embed_dim, "model.tie_embeddings: the top layer has ", c.out_dim(),
            " features, the embedding ", c.embed_dim);
  MOE_CHECK(!c.tie_embeddings || c.adaptive_softmax_cutoffs.empty(),
            "model.tie_embeddings: an lstm_lm ties only a full softmax (adaptive_softmax_cutoffs is set)");
  MOE_CHECK(c.sampled_softmax == 0 || c.adaptive_softmax_cutoffs.empty(),
            "model.sampled_softmax: a sampled softmax replaces the full one; adaptive_softmax_cutoffs is set too");
  return c;
}

YAML::Node LstmLmConfig::to_yaml() const { return keys().write(*this); }

}  // namespace moe
