// The Transformer encoder-decoder (Vaswani et al. 2017) with post-norm or pre-norm layers, tied
// embeddings, sinusoidal positions, and attention / feed-forward sites from the site registry
// (layers/sites.h), made once when the model is built, so MAE, MoA and sparse-MoE variants reuse
// everything else. Teacher-forced loss for training (position-wise FFN blocks, the output layer and the loss on the
// batch's real positions only: RealPositions); an encoder pass plus incremental decoding steps
// with key/value caches for beam search (the EncoderDecoder interface, models/decoder.h).
// Covered by tests/layers/transformer_test.cpp.
#pragma once
#include <memory>
#include <vector>

#include "layers/attention_layer.h"
#include "layers/builder.h"
#include "layers/sites.h"
#include "models/decoder.h"
#include "models/transformer_config.h"

namespace moe {

/// The real (unpadded) positions of a teacher-forced batch (data::Batch's src_rows, tgt_rows and tgt_labels: i32
/// flat positions b T + t, and the targets' ids): the position-wise FFN blocks run on those rows only, the output
/// layer and the loss on the real targets only. Undefined tensors: every position, the padding masked.
struct RealPositions {
  Tensor src_rows, tgt_rows, tgt_labels;
};

class Transformer : public EncoderDecoder {
 public:
  explicit Transformer(TransformerConfig config);
  const TransformerConfig& config() const { return c_; }

  Expr encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
              const Tensor& tgt_mask = {}) const override;
  /// Sum over non-padding target tokens of the label-smoothed cross-entropy (an f32 scalar), each token's times its
  /// weight in `tgt_weights` ([B, T], models/target_loss.h) when defined; `real` lets the position-wise blocks, the
  /// output layer and the loss skip the padding (the same loss).
  Expr loss(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in, const Tensor& tgt_out,
            float label_smoothing, const Tensor& tgt_mask = {}, const RealPositions& real = {},
            const Tensor& tgt_weights = {}) const;

  /// Decoding state: caches per decoder layer and the source mask, for N hypotheses.
  struct State : DecoderState {
    std::vector<KVCache> self, cross;  // per layer; also hold the gate-input state of MAE sites
    Tensor src_mask;
    Tensor source_mean;  // [N, d] encoder output mean, for MAE source_mean gates (else undefined)
    std::vector<int32_t> sentence;  // the source sentence (batch row) of each hypothesis row
    int64_t step = 0;
    /// Keeps the hypotheses `origin` names. The source-side tensors (cross-attention keys and values, src_mask,
    /// source_mean) are the same for every row of a sentence, so they are gathered only when some row
    /// changes sentence (the first step's expansion to the beams, a finished sentence dropping out): beam
    /// reordering alone leaves them as they are.
    void reorder(const Builder& b, const Tensor& origin) override;
  };
  DecoderSpec spec() const override;
  /// Encodes the source and prepares the cross-attention caches (inference graphs only).
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  Expr step_logits(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  Expr output_weight(const Builder& b) const override;
  /// The first head of the last decoder layer's cross-attention (Marian's alignment head).
  Expr alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const override;
  bool shares_embeddings() const override { return c_.tie_embeddings == TieEmbeddings::all; }
  /// The decoder sites whose teacher-forced graphs see later target positions.
  std::vector<std::string> future_sites() const;
  /// The routed sites (MoE feed-forward layers, MoA attention), one per layer that has them.
  const std::vector<ModelRoutedSite>& routed_sites() const { return routed_; }

 private:
  Expr embed(const Builder& b, const std::string& table, int64_t vocab, const Tensor& ids, int64_t offset) const;
  /// encode() with the real source positions (RealPositions::src_rows; undefined: every position).
  Expr encode_rows(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& rows) const;
  Expr encoder_layer(const Builder& b, Expr x, const Tensor& src_mask, int layer, const Tensor& rows) const;
  /// The FFN block of a layer; on the rows `rows` only when they are defined and the site is position-wise.
  Expr ffn_block(const Builder& b, const Expr& x, const FfnInput& in, const Tensor& rows) const;
  /// What decoder sites read besides their input: the target padding and the source mean (MAE gates); and the real
  /// target positions of a teacher-forced batch (RealPositions::tgt_rows) for the FFN blocks.
  struct GateContext {
    Tensor tgt_padding;
    Expr source_mean;
    Tensor rows;
    Expr* alignment = nullptr;  // set: receives the last layer's cross-attention first head (alignment())
  };
  GateContext gate_context(const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                           const Tensor& tgt_mask) const;
  Expr decoder_layer(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask, KVCache* self_cache,
                     KVCache* cross_cache, const GateContext& gates, int layer) const;
  /// Logits [rows, vocabulary] of decoder states h [B, T, d] or [rows, d]; [rows, V'] with the weight rows [V', d]
  /// of a restricted output (DecoderState::output_rows) when `weight_rows` is defined.
  Expr output_logits(const Builder& b, const Expr& h, const Tensor& weight_rows = {}) const;
  /// The teacher-forced decoder states [B, T, d] (decode() without the output layer).
  Expr decoder_states(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                      const Tensor& tgt_mask, const Tensor& rows = {}) const;
  Expr decoder_stack(const Builder& b, Expr x, const Expr& memory, const Tensor& src_mask, State* state,
                     const GateContext& gates) const;
  std::string src_table() const { return c_.tie_embeddings == TieEmbeddings::all ? "embed.shared" : "embed.src"; }
  std::string tgt_table() const { return c_.tie_embeddings == TieEmbeddings::all ? "embed.shared" : "embed.tgt"; }

  TransformerConfig c_;
  std::shared_ptr<const AttentionSite> attention_;
  std::shared_ptr<const FfnSite> ffn_;
  std::vector<ModelRoutedSite> routed_;
};

}  // namespace moe
