// The translation models of one moe-translate or moe-score pairs run: a checkpoint, or several
// (-m A -m B [--weights 0.5,0.5]) decoded as one EnsembleDecoder (models/ensemble_decoder.h). Every
// checkpoint must hold a translation model; ensembled ones must have the same source and target
// vocabularies (the input is encoded once, the outputs decoded once), checked piece by piece with an
// error naming both files. With --quantize int8 (or pre-quantized checkpoints) each model runs in int8
// on the CPU (models/int8_model.h), else in f32 with the weights transposed (models/inference_weights.h).
// A language model can be fused in (--lm CKPT --lm-weight W: shallow fusion, fairseq's --lm-path / --lm-weight):
// a causal LM whose vocabulary is the translation models' target vocabulary, piece by piece, a member of the
// ensemble whose log-probabilities are added times W (models/ensemble_decoder.h). Covered by
// tests/translator/ensemble_test.cpp and tests/translator/lm_fusion_test.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/checkpoint.h"
#include "models/ensemble_decoder.h"
#include "models/inference_weights.h"

namespace moe {

/// A language model fused into the search: each step adds weight x its log-probability of the next target token.
struct LmFusion {
  std::string path;   // its checkpoint ("" = none)
  double weight = 0;  // > 0 when a path is given
};

struct TranslationModels {
  std::vector<std::string> paths;  // the translation models', then the fused LM's
  std::vector<LoadedCheckpoint> checkpoints;
  std::vector<std::unique_ptr<InferenceWeights>> inference;  // one per checkpoint, released before them
  std::unique_ptr<EnsembleDecoder> ensemble;                 // with two or more checkpoints (an LM counts)

  /// The ensemble, or the one checkpoint's encoder-decoder.
  const Decoder& decoder() const;
  /// The parameters the calling graph runs on: the first checkpoint's.
  ParameterStore& params() const { return *checkpoints.front().params; }
  const data::Vocab& src_vocab() const { return checkpoints.front().first_vocab({"src", "tgt"}); }
  const data::Vocab& tgt_vocab() const { return checkpoints.front().first_vocab({"tgt", "src"}); }
  /// What the models compute in: the first model's int8 description when it runs in int8, else `dtype`.
  std::string compute_type(const std::string& dtype) const;
};

/// The first id at which two vocabularies differ (their sizes compared first), -1 when none.
int64_t first_vocab_difference(const data::Vocab& a, const data::Vocab& b);

/// One positive, finite weight per path, or none, and a positive, finite weight for a fused LM; errors name the
/// count, the path or --lm-weight.
void check_ensemble_weights(const std::vector<std::string>& paths, const std::vector<double>& weights,
                            const LmFusion& lm = {});

/// Loads `paths` onto `device`, each quantized as `quantize` says, and the fused `lm` when it names one;
/// `weights` (empty = equal) must have one positive value per path.
TranslationModels load_translation_models(const std::vector<std::string>& paths, const std::vector<double>& weights,
                                          Device device, Quantize quantize = Quantize::none, const LmFusion& lm = {});

}  // namespace moe
