// Decoder-only Transformer language model: embeddings (plain or adaptive input) + positions,
// `layers` causal self-attention + feed-forward blocks (pre- or post-norm, sites from
// lib/layers/sites.h so MAE / MoA / MoE variants plug in), an optional final layer norm, and a
// softmax over the vocabulary (plain, tied to the input embedding, or adaptive).
//   loss = sum over targets with mask != 0 of -log p(target_t | input_<=t)   (label-smoothed)
// Incremental decoding keeps per-layer key/value caches. With config.causal = false (type
// "transformer_mlm") the same stack is a bidirectional encoder whose self-attention ignores padding
// (input == pad_id) keys, for masked-LM batches (lib/data/mlm.h: loss on the selected positions).
// Covered by tests/models/transformer_lm_test.cpp.
#pragma once
#include <vector>

#include "layers/attention_layer.h"
#include "models/adaptive.h"
#include "models/model.h"
#include "models/transformer_lm_config.h"

namespace moe {

class TransformerLm : public Model {
 public:
  explicit TransformerLm(TransformerLmConfig config);
  const TransformerLmConfig& config() const { return c_; }

  std::string type() const override { return c_.causal ? "transformer_lm" : "transformer_mlm"; }
  YAML::Node config_yaml() const override { return c_.to_yaml(); }
  bool is_language_model() const override { return true; }
  Expr lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const override;

  /// Final hidden states [B, T, d] for input ids [B, T] (i32), positions starting at `offset`.
  Expr hidden(const Builder& b, const Tensor& input, std::vector<KVCache>* caches = nullptr, int64_t offset = 0) const;
  /// Summed loss of targets [B, T] given input [B, T]; mask [B, T] (any dtype; undefined = all).
  Expr loss(const Builder& b, const Tensor& input, const Tensor& target, const Tensor& mask,
            float label_smoothing) const;
  /// Log-probabilities [B * T, V] (f32) of the next token at every position.
  Expr log_probs(const Builder& b, const Tensor& input) const;

  struct State {
    std::vector<KVCache> caches;
    int64_t step = 0;
  };
  State start() const;
  /// Log-probabilities [N, V] (f32) of the token after `prev` [N] (i32); advances the state.
  Expr step(const Builder& b, State& state, const Tensor& prev) const;
  /// Row i of the new state is row origin[i] (i32 [M]) of the old one.
  static void reorder(State& state, const Tensor& origin);

 private:
  Expr embed(const Builder& b, const Tensor& input, int64_t offset) const;
  Expr layer(const Builder& b, Expr x, const Tensor& key_padding, const Tensor& query_padding, KVCache* cache) const;
  Expr output_log_probs(const Builder& b, const Expr& rows) const;
  AdaptiveSpec input_spec() const;
  AdaptiveSpec softmax_spec() const;
  AdaptiveSoftmaxWeights softmax_weights(const Builder& b) const;
  Expr output_matrix(const Builder& b) const;

  TransformerLmConfig c_;
};

}  // namespace moe
