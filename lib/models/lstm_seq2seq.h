// The LSTM encoder-decoder with mixture-of-experts layers of the sparsely-gated MoE paper's translation
// models (model.type lstm_seq2seq; Shazeer et al. 2017 §5.3, App. E, G; a GNMT, Wu et al. 2016, cut to
// 3 + 2 layers). Every layer reads and writes d_model features; LSTMs have `hidden` cells and, when
// hidden != d_model, an output projection to d_model (LSTM-2048-512 in the paper). With p = dropout:
//   encoder: x = drop(E_src[src]);  layer 0: x = drop(biLSTM(x)) + x (GNMT's bidirectional bottom layer,
//            each direction d/2 features; `bidirectional: false` makes it a plain LSTM);
//            layer l > 0: x = drop(LSTM_l(x)) + x;  after the layers of encoder_moe_after (0-based; the
//            paper: [1], between layers 2 and 3): x = drop(sigmoid(MoE(x))) + x.   memory = x.
//   decoder, step t, input y_t = drop(E_tgt[y_<t last]):
//            layer 0 (input feeding): z_t = drop(LSTM_0([y_t ; a_t-1])) + y_t, a_0 = 0;
//            the attention (seq2seq_attention.h, App. G's function or GNMT's) reads z_t:
//            a_t = sum_i softmax_i A(memory_i, z_t) memory_i;
//            after the layers of decoder_moe_after (the paper: [0], between layers 1 and 2):
//            z = drop(sigmoid(MoE(z))) + z;   layer l > 0: z = drop(LSTM_l([z ; a_t])) + z;
//            logits = z W_out^T (W_out = E_tgt with tie_embeddings decoder | all).
// The MoE layers are the feed-forward site of model.moe (layers/sites.h; type moe: noisy top-k, flat or
// hierarchical, or strictly balanced batchwise gating with learned thresholds, moe_ffn.h). In training
// they see the real tokens only (padding is dropped before the layer and gets a zero update), so the
// batchwise gate ranks the batch's tokens; at inference every row is routed on its own.
// Causality: with gating batchwise, training ranks each expert's tokens over the whole batch, so a
// teacher-forced training loss depends on later target tokens and on the other sentences of the batch
// by design (App. F; MODELS.md §3.10); inference graphs (decoding, moe-score, validation) gate each
// token by the learned thresholds alone and are causal and independent of the batch.
// Teacher forcing (decode) runs layer 0 and the attention step by step and the rest over whole
// sequences; incremental decoding (step) runs the same code with one step and a carried state.
// Covered by tests/models/lstm_seq2seq_test.cpp and tests/models/causality_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <memory>
#include <vector>

#include "config/keys.h"
#include "layers/lstm.h"
#include "layers/seq2seq_attention.h"
#include "layers/sites.h"
#include "models/model.h"
#include "models/transformer_config.h"

namespace moe {

struct LstmSeq2seqConfig {
  int64_t src_vocab = 0, tgt_vocab = 0;  // filled from the vocabularies
  int pad_id = 0, bos_id = 2, eos_id = 3;
  int64_t d_model = 512, hidden = 2048;
  int enc_layers = 3, dec_layers = 2;
  bool bidirectional = true;  // encoder layer 0 reads both directions (GNMT)
  AttentionFunction attention_function = AttentionFunction::shazeer;
  int64_t attention_dim = 0;  // n of the attention function (0: d_model)
  std::vector<int> encoder_moe_after = {1}, decoder_moe_after = {0};
  YAML::Node moe;  // the MoE site's options ({type: moe, experts, k, hidden, gating, ...})
  float dropout = 0.1f;
  TieEmbeddings tie_embeddings = TieEmbeddings::none;
  int64_t max_positions = 1024;

  /// The keys of model type lstm_seq2seq.
  static const config::Keys<LstmSeq2seqConfig>& keys();
  static LstmSeq2seqConfig from_yaml(const YAML::Node& node);
  YAML::Node to_yaml() const;
  /// The LSTM of `input` features writing d_model (a projection when hidden != d_model).
  LstmSpec lstm(int64_t input) const { return {input, hidden, hidden == d_model ? 0 : d_model}; }
  /// Each direction of the bidirectional layer 0: d_model / 2 features.
  LstmSpec direction() const { return {d_model, hidden, hidden == d_model / 2 ? 0 : d_model / 2}; }
  int64_t attention_units() const { return attention_dim > 0 ? attention_dim : d_model; }
};

class LstmSeq2seq : public Model, public EncoderDecoder {
 public:
  explicit LstmSeq2seq(LstmSeq2seqConfig config);
  const LstmSeq2seqConfig& config() const { return c_; }
  std::string type() const override { return "lstm_seq2seq"; }
  std::string site_types() const override;
  std::vector<ModelRoutedSite> routed_sites() const override { return routed_; }
  YAML::Node config_yaml() const override { return c_.to_yaml(); }
  bool is_language_model() const override { return false; }
  Expr loss(const Builder& b, const data::Batch& batch, float label_smoothing) const override;
  const Decoder* decoder() const override { return this; }
  const EncoderDecoder* encoder_decoder() const override { return this; }

  Expr encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
              const Tensor& tgt_mask = {}) const override;
  bool shares_embeddings() const override { return c_.tie_embeddings == TieEmbeddings::all; }

  /// The decoder's recurrent state: one LSTM state per layer and the last attention context [N, d].
  struct Recurrence {
    std::vector<LstmState> layers;
    Expr context;
  };
  /// Decoding state: the attention's source side and the recurrence, per hypothesis.
  struct State : DecoderState {
    AttentionMemory memory;
    Recurrence recurrence;
    void reorder(const Builder& b, const Tensor& origin) override;
  };
  DecoderSpec spec() const override;
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  Expr output_weight(const Builder& b) const override;
  /// The decoder's attention (one head).
  Expr alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const override;

 private:
  Expr embed(const Builder& b, bool source, const Tensor& ids) const;
  /// x + drop(sigmoid(MoE(x))) for x [B, T, d]; training routes only the positions where mask != 0 (a router
  /// that reads the padding gets the whole rows and the mask instead).
  Expr moe_block(const Builder& b, const FfnSite& site, const Expr& x, const Tensor& mask, FfnRole role) const;
  AttentionMemory attention_memory_of(const Builder& b, const Expr& memory, const Tensor& src_mask) const;
  /// The decoder layers over embedded inputs y [B, T, d], carrying `r`; returns the top states [B, T, d].
  /// `probs` (optional) receives the attention probabilities of the T steps, [B, S] each.
  Expr decoder_stack(const Builder& b, const Expr& y, const AttentionMemory& memory, const Tensor& tgt_mask,
                     Recurrence& r, std::vector<Expr>* probs = nullptr) const;
  /// The T steps' attention probabilities `probs` ([B, S] each) as one [B, T, S] tensor of `dtype`.
  static Expr stacked_weights(std::vector<Expr>& probs, int64_t B, int64_t S, DType dtype);
  /// Logits [B * T, vocabulary] of states h [B, T, d]; [.., V'] with the rows [V', d] of a restricted output
  /// (DecoderState::output_rows) when `weight_rows` is defined.
  Expr output_logits(const Builder& b, const Expr& h, const Tensor& weight_rows = {}) const;
  std::string table(bool source) const;
  /// The MoE site when layer `l` of that side (encoder_moe_after / decoder_moe_after) is followed by one.
  const FfnSite* moe_after(const std::vector<int>& layers, int l) const;

  LstmSeq2seqConfig c_;
  std::shared_ptr<const FfnSite> moe_;  // made once; every MoE layer has its own parameters
  std::vector<ModelRoutedSite> routed_;
};

}  // namespace moe
