// BLEU validation: decodes the valid set's sources (the first valid.bleu_lines, or all) with beam
// search through lib/translator's Translator, detokenises with the target vocabulary and scores
// against the raw reference lines with sacreBLEU's BLEU (13a, exp smoothing; lib/metrics/bleu.h).
// Compiled in when lib/translator/translator.h is present (available() says so); without it,
// valid.metric bleu is refused at start-up with a clear message.
// Covered by tests/training/bleu_validation_test.cpp (when the translator is built).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "graph/parameters.h"
#include "models/model.h"
#include "training/train_options.h"

namespace moe {

class BleuValidator {
 public:
  /// True when this build has the translator (BLEU validation possible).
  static bool available();
  /// Reads and encodes the sources and references (the first `options.bleu_lines`, 0 = all).
  BleuValidator(const std::string& src_path, const std::string& ref_path, const data::Vocab& src_vocab,
                const ValidOptions& options, int64_t max_tokens);
  /// Corpus BLEU of `model` with the parameters in `store`; `hyps` (when given) receives the lines.
  double run(const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
             std::vector<std::string>* hyps = nullptr) const;
  int64_t sentences() const { return static_cast<int64_t>(refs_.size()); }

 private:
  std::vector<std::vector<int32_t>> sources_;
  std::vector<std::string> refs_;
  ValidOptions o_;
  int64_t max_tokens_;
};

}  // namespace moe
