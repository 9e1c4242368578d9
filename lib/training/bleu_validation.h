// BLEU validation: decodes the valid set's sources (the first valid.bleu_lines, or all) with the
// decoder the program passes in (moe-train: lib/translator's beam search, apps/moe-train/
// bleu_decoder.cpp; training does not depend on the translator), detokenises with the target
// vocabulary and scores against the raw reference lines with sacreBLEU's BLEU (13a, exp smoothing;
// lib/metrics/bleu.h). Without a decoder, valid.metric bleu is refused at start-up with a clear message.
// Covered by tests/training/bleu_validation_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "graph/parameters.h"
#include "models/model.h"
#include "training/train_options.h"

namespace moe {

/// Decodes source token sequences (without </s>) with `model`'s parameters in the store, in the compute
/// dtype, into `tgt_vocab`'s tokens (its <unk> for valid.unkpen), its graphs built with `context` (a training
/// run's communicator): the best hypothesis's tokens per source, in order (empty when none was found).
/// Sources longer than the model's positions allow are the decoder's to cut.
using BleuDecoder = std::function<std::vector<std::vector<int32_t>>(
    const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
    const std::vector<std::vector<int32_t>>& sources, const BuildContext& context)>;

class BleuValidator {
 public:
  /// Reads and encodes the sources and references (the first `options.bleu_lines`, 0 = all).
  BleuValidator(const std::string& src_path, const std::string& ref_path, const data::Vocab& src_vocab,
                const ValidOptions& options, BleuDecoder decoder);
  /// Corpus BLEU of `model` with the parameters in `store`; `hyps` (when given) receives the lines.
  double run(const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
             std::vector<std::string>* hyps = nullptr, const BuildContext& context = {}) const;
  int64_t sentences() const { return static_cast<int64_t>(refs_.size()); }

 private:
  std::vector<std::vector<int32_t>> sources_;
  std::vector<std::string> refs_;
  BleuDecoder decoder_;
};

}  // namespace moe
