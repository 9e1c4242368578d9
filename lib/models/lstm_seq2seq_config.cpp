// LstmSeq2seqConfig (lstm_seq2seq.h): the key table of model type lstm_seq2seq and the checks across
// keys. Covered by tests/models/lstm_seq2seq_test.cpp (options case) and tests/training/recipes_test.cpp.
#include "models/config_keys.h"
#include "models/lstm_seq2seq.h"

namespace moe {

const config::Keys<LstmSeq2seqConfig>& LstmSeq2seqConfig::keys() {
  using C = LstmSeq2seqConfig;
  using config::at_least;
  static const config::Keys<C> k = [] {
    config::Keys<C> k("an lstm_seq2seq");
    model_keys::add_fixed_type(k, "lstm_seq2seq");
    k.add("src_vocab", &C::src_vocab, "source vocabulary size (filled in from the vocabulary)").internal();
    k.add("tgt_vocab", &C::tgt_vocab, "target vocabulary size (filled in from the vocabulary)").internal();
    model_keys::add_special_ids(k);
    k.add("d_model", &C::d_model, "lstm_seq2seq: embedding, layer input/output and MoE width", at_least<int64_t>(2))
        .add("hidden", &C::hidden, "lstm_seq2seq: LSTM cells per layer (projected to d_model when they differ)",
             at_least<int64_t>(1))
        .add("enc_layers", &C::enc_layers, "lstm_seq2seq: encoder LSTM layers", at_least(1))
        .add("dec_layers", &C::dec_layers, "lstm_seq2seq: decoder LSTM layers (layer 0 feeds the attention)",
             at_least(1))
        .add("bidirectional", &C::bidirectional, "lstm_seq2seq: encoder layer 0 reads both directions (GNMT)")
        .add("attention_function", &C::attention_function,
             "lstm_seq2seq: shazeer (App. G: V.tanh(xU)tanh(yW)) or gnmt (V.tanh(xU + yW))")
        .add("attention_dim", &C::attention_dim, "lstm_seq2seq: attention units n (0: d_model)", at_least<int64_t>(0))
        .add("encoder_moe_after", &C::encoder_moe_after,
             "lstm_seq2seq: encoder layers (0-based) followed by a mixture-of-experts layer (the paper: [1])")
        .add("decoder_moe_after", &C::decoder_moe_after,
             "lstm_seq2seq: decoder layers (0-based) followed by a mixture-of-experts layer (the paper: [0])")
        .add("moe", &C::moe, "the mixture-of-experts layers' options ({type: moe, experts, k, hidden, gating, ...})")
        .add("dropout", &C::dropout, "dropout on the embeddings and every LSTM and MoE output")
        .add("tie_embeddings", &C::tie_embeddings,
             "lstm_seq2seq: none | decoder (output matrix = target embedding) | all (+ source; joint vocabulary)")
        .add("max_positions", &C::max_positions, "longest source or target sequence", at_least<int64_t>(2));
    return k;
  }();
  return k;
}

LstmSeq2seqConfig LstmSeq2seqConfig::from_yaml(const YAML::Node& node) {
  LstmSeq2seqConfig c;
  keys().read(node, c, "model");
  for (int l : c.encoder_moe_after)
    MOE_CHECK(l >= 0 && l < c.enc_layers, "model.encoder_moe_after: layer ", l, " is not in [0, ", c.enc_layers, ")");
  for (int l : c.decoder_moe_after)
    MOE_CHECK(l >= 0 && l < c.dec_layers, "model.decoder_moe_after: layer ", l, " is not in [0, ", c.dec_layers, ")");
  MOE_CHECK(!c.bidirectional || c.d_model % 2 == 0, "model.bidirectional: each direction writes d_model / 2 features, ",
            "so model.d_model (", c.d_model, ") must be even");
  return c;
}

YAML::Node LstmSeq2seqConfig::to_yaml() const { return keys().write(*this); }

}  // namespace moe
