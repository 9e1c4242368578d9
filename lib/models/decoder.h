// Decoder: what beam search (lib/translator) and forced scoring need from a model, so that every
// encoder-decoder and every causal language model decodes through one interface:
//   start(src)  encodes the source (an encoder-decoder) or starts empty histories (a language model)
//   step(prev)  log-probabilities [N, V] of the next token after prev [N]; advances the state
//   reorder     keeps and duplicates hypotheses: row i of the new state is row origin[i] of the old
//   restrict_output  later steps score only some output entries (a shortlist: translator/shortlist.h)
//   alignment   the alignment head's attention over the source for a given output (translator/alignment.h)
// EncoderDecoder adds the teacher-forced halves (encode, decode) that forced scoring and analysis run
// over whole target sentences. Covered by tests/layers/transformer_test.cpp (the Transformer),
// tests/models/transformer_lm_test.cpp and tests/models/lstm_lm_test.cpp (the language models; their first step:
// tests/translator/lm_generation_test.cpp) and
// tests/translator/translator_test.cpp (beam search over it).
#pragma once
#include <memory>

#include "layers/builder.h"

namespace moe {

/// The ids and limits a search needs.
struct DecoderSpec {
  int32_t pad_id = 0, bos_id = 2, eos_id = 3;
  int64_t max_positions = 1024;  // the decoder's position limit (step t reads position t)
  int64_t vocab = 0;             // output vocabulary
};

/// The per-hypothesis state of a decoding (caches, recurrent states).
class DecoderState {
 public:
  virtual ~DecoderState() = default;
  /// Row i of the new state is row origin[i] (i32 [N'], on the decoder's device) of the old one.
  virtual void reorder(const Builder& b, const Tensor& origin) = 0;
  /// The output layer's weight rows [V', d] (compute dtype) of the entries the steps score, set by
  /// Decoder::restrict_output; undefined: the whole vocabulary.
  Tensor output_rows;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual DecoderSpec spec() const = 0;
  /// Starts decoding in an inference graph: an encoder-decoder encodes `src` ([B, S] i32) with `src_mask`
  /// ([B, S] u8, 1 = token); a language model ignores them (pass undefined tensors).
  virtual std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src, const Tensor& src_mask) const = 0;
  /// Log-probabilities [N, V] (f32) of the next token after `prev` [N] (i32); advances the state.
  virtual Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const = 0;
  /// Scores [N, V] (f32) whose log-softmax per row is step()'s log-probabilities: the logits where the model has
  /// them, so that greedy search without scores skips the log-softmax over the vocabulary (as CTranslate2's does);
  /// by default step() itself (log-probabilities are their own log-softmax). Advances the state as step() does.
  virtual Expr step_logits(const Builder& b, DecoderState& state, const Tensor& prev) const {
    return step(b, state, prev);
  }
  /// The output layer's weight [V, d] (the f32 parameter: logits = h weight^T); undefined where a model has none.
  virtual Expr output_weight(const Builder&) const { return {}; }
  /// Makes the later steps of `state` score only the output entries `columns` (i32 [V'], on the decoder's device):
  /// step() gives [N, V'] log-probabilities normalised over them and step_logits() [N, V'] scores, column j for
  /// entry columns[j]. By default it keeps the rows of output_weight() in state.output_rows (an error for a model
  /// without one), which the model's steps multiply instead of the whole weight.
  virtual void restrict_output(const Builder& b, DecoderState& state, const Tensor& columns) const;
  /// Word alignment: the attention weights [B, T, S] (f32) of the model's alignment head over the source `src`
  /// ([B, S] i32 with its </s>; `src_mask` u8, 1 = token) while it reads the target inputs `tgt_in` ([B, T] i32:
  /// <s> and the output, padded with pad_id), teacher-forced. Row t is the distribution over the source positions
  /// with which the model predicts the output token after tgt_in[., t]. By default an error: a model without
  /// attention over a source has no alignment.
  virtual Expr alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const;
};

/// What a language model reads at a decoding step after `prev` (i32 [N]): searches begin every sentence with <s>,
/// but moe's language models learn from streams in which each sentence follows </s> (data/lm_stream.h) and never
/// read <s>, so the first step (`first`) reads </s> in every row (as fairseq's decoding starts from </s>), and the
/// later ones `prev` itself.
Tensor lm_step_tokens(const Tensor& prev, bool first, int32_t eos_id);

/// Whether `d`, running on `params`, has an output weight (Decoder::output_weight), which the default restrict_output
/// needs: false for a language model with an adaptive softmax, which a shortlist therefore cannot restrict.
bool has_output_weight(const Decoder& d, ParameterStore& params);

class EncoderDecoder : public Decoder {
 public:
  /// Encoder states [B, S, d] for source ids [B, S] (i32) with mask [B, S] (u8, 1 = token).
  virtual Expr encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const = 0;
  /// Teacher-forced logits [B * T, V] for decoder inputs [B, T]; tgt_mask (u8 [B, T], optional) marks the
  /// real target positions.
  virtual Expr decode(const Builder& b, const Expr& memory, const Tensor& src_mask, const Tensor& tgt_in,
                      const Tensor& tgt_mask = {}) const = 0;
  /// True when source and target share one embedding table (they then need one joint vocabulary).
  virtual bool shares_embeddings() const { return false; }
};

}  // namespace moe
