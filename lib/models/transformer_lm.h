// Decoder-only Transformer language model: embeddings (plain or adaptive input) + positions,
// `layers` causal self-attention + feed-forward blocks (pre- or post-norm, sites from
// lib/layers/sites.h so MAE / MoA / MoE variants plug in), an optional final layer norm, and a
// softmax over the vocabulary (plain, tied to the input embedding, or adaptive).
//   loss = sum over targets with mask != 0 of -log p(target_t | input_<=t)   (label-smoothed)
// Incremental decoding keeps per-layer key/value caches. With config.causal = false (type
// "transformer_mlm") the same stack is a bidirectional encoder whose self-attention ignores padding
// (input == pad_id) keys, for masked-LM batches (lib/data/mlm.h: loss on the selected positions).
// Covered by tests/models/transformer_lm_test.cpp (a shortlist's restricted steps: tests/translator/shortlist_test.cpp).
#pragma once
#include <memory>
#include <vector>

#include "layers/attention_layer.h"
#include "layers/sites.h"
#include "models/adaptive.h"
#include "models/model.h"
#include "models/transformer_lm_config.h"

namespace moe {

class TransformerLm : public Model, public Decoder {
 public:
  explicit TransformerLm(TransformerLmConfig config);
  const TransformerLmConfig& config() const { return c_; }

  std::string type() const override { return c_.causal ? "transformer_lm" : "transformer_mlm"; }
  YAML::Node config_yaml() const override { return c_.to_yaml(); }
  bool is_language_model() const override { return true; }
  Expr lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const override;

  /// Final hidden states [B, T, d] for input ids [B, T] (i32), positions starting at `offset`.
  Expr hidden(const Builder& b, const Tensor& input, std::vector<KVCache>* caches = nullptr, int64_t offset = 0) const;
  using Model::loss;  // a translation batch's (Model's: an error for a language model), beside this one
  /// Summed loss of targets [B, T] given input [B, T], each target's times its mask value (mask [B, T], any
  /// dtype: 0/1, or data weighting's weights; undefined = all 1). lm_loss passes batch.weights when defined.
  Expr loss(const Builder& b, const Tensor& input, const Tensor& target, const Tensor& mask,
            float label_smoothing) const;
  /// Log-probabilities [B * T, V] (f32) of the next token at every position.
  Expr log_probs(const Builder& b, const Tensor& input) const;

  /// Incremental decoding (models/decoder.h; causal models only: decoder() is nullptr for transformer_mlm).
  struct State : DecoderState {
    std::vector<KVCache> caches;
    int64_t step = 0;
    void reorder(const Builder& b, const Tensor& origin) override;
  };
  const Decoder* decoder() const override { return c_.causal ? this : nullptr; }
  DecoderSpec spec() const override;
  /// Empty histories; src and src_mask are not read.
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src = {},
                                      const Tensor& src_mask = {}) const override;
  /// Log-probabilities over the whole vocabulary, or over the entries restrict_output kept (a shortlist).
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  /// The output matrix [V, d] (f32); undefined with an adaptive softmax (no shortlist then).
  Expr output_weight(const Builder& b) const override;
  std::vector<std::string> future_sites() const override;
  std::vector<ModelRoutedSite> routed_sites() const override { return routed_; }

 private:
  Expr embed(const Builder& b, const Tensor& input, int64_t offset) const;
  Expr layer(const Builder& b, Expr x, const Tensor& key_padding, const Tensor& query_padding, KVCache* cache,
             int index) const;
  /// Log-softmax of rows x the output matrix, or of rows x `weight_rows` (a shortlist's rows, compute dtype).
  Expr output_log_probs(const Builder& b, const Expr& rows, const Tensor& weight_rows = {}) const;
  SiteRole role() const { return c_.causal ? SiteRole::lm_self : SiteRole::encoder_self; }
  FfnRole ffn_role() const { return c_.causal ? FfnRole::lm : FfnRole::encoder; }
  AdaptiveSpec input_spec() const;
  AdaptiveSpec softmax_spec() const;
  AdaptiveSoftmaxWeights softmax_weights(const Builder& b) const;
  Expr output_matrix(const Builder& b) const;

  TransformerLmConfig c_;
  std::shared_ptr<const AttentionSite> attention_;
  std::shared_ptr<const FfnSite> ffn_;
  std::vector<ModelRoutedSite> routed_;
};

}  // namespace moe
