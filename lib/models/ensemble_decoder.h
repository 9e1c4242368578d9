// EnsembleDecoder: several decoders presented as one (moe-translate -m A -m B, moe-score pairs), so
// that beam search, n-best and forced scoring run an ensemble unchanged. Each step returns the
// weighted average of the members' next-token log-probabilities,
//   log p_ens(y | h) = sum_i w_i log p_i(y | h),   w_i = weight_i / sum_j weight_j,
// as Marian's ensembles do (not a normalised distribution unless the members agree). Every member
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
  double weight = 1.0;               // > 0; normalised over the members
  std::string name;                  // for messages (the checkpoint path)
};

class EnsembleDecoder : public Decoder {
 public:
  /// At least one member; errors name the members whose vocabularies, specials or devices differ.
  explicit EnsembleDecoder(std::vector<EnsembleMember> members);
  /// The first member's ids and vocabulary, the smallest max_positions of all.
  DecoderSpec spec() const override { return spec_; }
  std::unique_ptr<DecoderState> start(const Builder& b, const Tensor& src, const Tensor& src_mask) const override;
  Expr step(const Builder& b, DecoderState& state, const Tensor& prev) const override;
  /// Restricts every member's output to the same entries.
  void restrict_output(const Builder& b, DecoderState& state, const Tensor& columns) const override;
  /// The first member's alignment (as Marian's ensembles give theirs), in its own graph.
  Expr alignment(const Builder& b, const Tensor& src, const Tensor& src_mask, const Tensor& tgt_in) const override;
  /// The normalised weights, in member order.
  const std::vector<float>& weights() const { return weights_; }

 private:
  std::vector<EnsembleMember> members_;
  std::vector<float> weights_;
  DecoderSpec spec_;
};

}  // namespace moe
