// The Transformer encoder-decoder (Vaswani et al. 2017) with post-norm or pre-norm layers, tied
// embeddings, sinusoidal positions, and pluggable attention / feed-forward sites (so MAE, MoA and
// sparse-MoE variants reuse everything else). Teacher-forced loss for training; an encoder pass plus
// incremental decoding steps with key/value caches for beam search.
// Covered by tests/layers/transformer_test.cpp.
#pragma once
#include <vector>

#include "layers/attention_layer.h"
#include "layers/builder.h"
#include "models/transformer_config.h"

namespace moe {

class Transformer {
 public:
  explicit Transformer(TransformerConfig config) : c_(std::move(config)) {}
  const TransformerConfig& config() const { return c_; }

  /// Encoder states [B, S, d] for source ids [B, S] (i32) with mask [B, S] (u8, 1 = token).
  Expr encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const;
  /// Teacher-forced logits [B * T, V] for decoder inputs [B, T]; tgt_mask (u8 [B, T], optional: else
  /// derived from pad_id when a site needs it) marks the real target positions.
  Expr decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
              const Tensor& tgt_mask = {}) const;
  /// Sum over non-padding target tokens of the label-smoothed cross-entropy (an f32 scalar).
  Expr loss(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in, const Tensor& tgt_out,
            float label_smoothing, const Tensor& tgt_mask = {}) const;

  /// Decoding state: caches per decoder layer and the source mask, for N hypotheses.
  struct DecoderState {
    std::vector<KVCache> self, cross;  // per layer; also hold the gate-input state of MAE sites
    Tensor src_mask;
    Tensor source_mean;  // [N, d] encoder output mean, for MAE source_mean gates (else undefined)
    int64_t step = 0;
  };
  /// Encodes the source and prepares the cross-attention caches (inference graphs only).
  DecoderState start(const Builder& b, const Tensor& src, const Tensor& src_mask) const;
  /// Log-probabilities [N, V] (f32) of the next token after `prev` [N] (i32); advances the state.
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const;
  /// Keeps (and duplicates) hypotheses: row i of the new state is row origin[i] of the old one.
  static void reorder(DecoderState& state, const Tensor& origin);

 private:
  Expr embed(const Builder& b, const std::string& table, int64_t vocab, const Tensor& ids, int64_t offset) const;
  Expr encoder_layer(const Builder& b, Expr x, const Tensor& src_mask) const;
  /// What decoder sites read besides their input: the target padding and the source mean (MAE gates).
  struct GateContext {
    Tensor tgt_padding;
    Expr source_mean;
  };
  GateContext gate_context(const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                           const Tensor& tgt_mask) const;
  Expr decoder_layer(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask, KVCache* self_cache,
                     KVCache* cross_cache, const GateContext& gates) const;
  Expr output_logits(const Builder& b, const Expr& h) const;
  Expr decoder_stack(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask, DecoderState* state,
                     const GateContext& gates) const;
  std::string src_table() const { return c_.tie_embeddings == "all" ? "embed.shared" : "embed.src"; }
  std::string tgt_table() const { return c_.tie_embeddings == "all" ? "embed.shared" : "embed.tgt"; }

  TransformerConfig c_;
};

}  // namespace moe
