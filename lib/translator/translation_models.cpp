// translation_models.h implementation. Covered by tests/translator/ensemble_test.cpp.
#include "translator/translation_models.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace moe {

int64_t first_vocab_difference(const data::Vocab& a, const data::Vocab& b) {
  if (a.size() != b.size()) return std::min(a.size(), b.size());
  for (int32_t i = 0; i < a.size(); ++i)
    if (a.piece(i) != b.piece(i)) return i;
  return -1;
}

namespace {
void check_same_vocab(const TranslationModels& m, size_t i, const char* side, const data::Vocab& a,
                      const data::Vocab& b, const char* why = "ensembled models need the same vocabularies") {
  const int64_t at = first_vocab_difference(a, b);
  MOE_CHECK(at < 0, "ensemble: '", m.paths[i], "' and '", m.paths[0], "' have different ", side, " vocabularies (",
            b.size(), " and ", a.size(), " tokens, first difference at id ", at, "); ", why);
}

/// The fused LM of `lm` (loaded after the translation models): a causal language model over their target vocabulary.
EnsembleMember fused_lm(TranslationModels& m, const LmFusion& lm, Device device, Quantize quantize) {
  m.paths.push_back(lm.path);
  m.checkpoints.push_back(load_checkpoint(lm.path, device));
  const LoadedCheckpoint& ck = m.checkpoints.back();
  const Decoder* net = ck.model->is_language_model() ? ck.model->decoder() : nullptr;
  MOE_CHECK(net, "--lm '", lm.path, "' holds a ", ck.model->type(),
            " model, not a causal language model (transformer_lm or lstm_lm)");
  check_same_vocab(m, m.paths.size() - 1, "target", m.tgt_vocab(), ck.first_vocab({"lm", "tgt", "src"}),
                   "a fused language model must read the translation models' target vocabulary");
  m.inference.push_back(std::make_unique<InferenceWeights>(ck, quantize, device));
  return {net, ck.params.get(), lm.weight, lm.path, true};
}
}  // namespace

const Decoder& TranslationModels::decoder() const {
  if (ensemble) return *ensemble;
  return *checkpoints.front().model->encoder_decoder();
}

void check_ensemble_weights(const std::vector<std::string>& paths, const std::vector<double>& weights,
                            const LmFusion& lm) {
  MOE_CHECK(!paths.empty(), "no checkpoint given (-m CHECKPOINT)");
  MOE_CHECK(lm.path.empty() || (std::isfinite(lm.weight) && lm.weight > 0),
            "--lm-weight must be a positive number, got ", lm.weight);
  if (weights.empty()) return;
  MOE_CHECK(weights.size() == paths.size(), "--weights has ", weights.size(), " value(s) for ", paths.size(),
            " model(s) (-m); give one weight per model");
  for (size_t i = 0; i < paths.size(); ++i)
    MOE_CHECK(std::isfinite(weights[i]) && weights[i] > 0, "--weights: the weight of '", paths[i],
              "' must be a positive number, got ", weights[i]);
}

std::string TranslationModels::compute_type(const std::string& dtype) const {
  return !inference.empty() && inference.front()->on() ? inference.front()->describe() : dtype;
}

TranslationModels load_translation_models(const std::vector<std::string>& paths, const std::vector<double>& weights,
                                          Device device, Quantize quantize, const LmFusion& lm) {
  check_ensemble_weights(paths, weights, lm);
  TranslationModels m;
  m.paths = paths;
  std::vector<EnsembleMember> members;
  for (size_t i = 0; i < paths.size(); ++i) {
    m.checkpoints.push_back(load_checkpoint(paths[i], device));
    const LoadedCheckpoint& ck = m.checkpoints.back();
    const EncoderDecoder* net = ck.model->encoder_decoder();
    MOE_CHECK(net, "'", paths[i], "' holds a ", ck.model->type(),
              " model, not a translation model (use moe-score ppl for language models)");
    if (i > 0) {
      check_same_vocab(m, i, "source", m.src_vocab(), ck.first_vocab({"src", "tgt"}));
      check_same_vocab(m, i, "target", m.tgt_vocab(), ck.first_vocab({"tgt", "src"}));
    }
    m.inference.push_back(std::make_unique<InferenceWeights>(ck, quantize, device));
    members.push_back({net, ck.params.get(), weights.empty() ? 1.0 : weights[i], paths[i]});
  }
  if (!lm.path.empty()) members.push_back(fused_lm(m, lm, device, quantize));
  if (members.size() > 1) m.ensemble = std::make_unique<EnsembleDecoder>(std::move(members));
  return m;
}

}  // namespace moe
