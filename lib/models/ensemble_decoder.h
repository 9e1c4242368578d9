// EnsembleDecoder: several decoders presented as one (moe-translate -m A -m B, moe-score pairs), so
// that beam search, n-best and forced scoring run an ensemble unchanged. Each step returns the
// weighted average of the members' next-token log-probabilities,
//   log p_ens(y | h) = sum_i w_i log p_i(y | h),   w_i = weight_i / sum_j weight_j,
// as Marian's ensembles do (not a normalised distribution unless the members agree). A fused member (a language
// model over the target vocabulary: shallow fusion, fairseq's --lm-path / --lm-weight) adds its log-probabilities
// times its weight as given, outside the normalisation:
//   log p(y | h) = sum_i w_i log p_i(y | h) + lambda log p_lm(y | h_target),
// so one translation model with an LM scores log p_tm + lambda log p_lm, as fairseq does. Every member
// decodes in its own inference graph over its own parameters (made by start, with the calling
// graph's dtype and run-time settings), and reorder reorders every member's state. The members
// must share the target vocabulary size and special ids (checked on construction).
// Covered by tests/translator/ensemble_test.cpp.
#pragma once
#include <vector>

#include "graph/parameters.h"
#include "models/decoder.h"

namespace moe {

struct EnsembleMember {
  const Decoder* decoder = nullptr;
  ParameterStore* params = nullptr;  // the member's parameters, on the ensemble's device
  double weight = 1.0;               // > 0; normalised over the members that are not fused
  std::string name;                  // for messages (the checkpoint path)
  bool fused = false;                // a language model fused in: its weight is used as given
};

class EnsembleDecoder : public Decoder {
 public:
  /// At least one member, the first not fused; errors name the members whose vocabularies, specials or devices
  /// differ.
  explicit EnsembleDecoder(std::vector<EnsembleMember> members);
  /// The first member's ids and vocabulary, the smallest max_positions of all.
  DecoderSpec spec() const override { return spec_; }
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  /// Restricts every member's output to the same entries.
  void restrict_output(const Builder& b, DecoderState& state, const Tensor& columns) const override;
  /// The first member's alignment (as Marian's ensembles give theirs), in its own graph.
  Expr alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const override;
  /// The weights the steps apply, in member order: normalised, and fused members' as given.
  const std::vector<float>& weights() const { return weights_; }

 private:
  std::vector<EnsembleMember> members_;
  std::vector<float> weights_;
  DecoderSpec spec_;
};

}  // namespace moe
