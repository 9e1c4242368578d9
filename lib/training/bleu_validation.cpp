// bleu_validation.h implementation. Covered by tests/training/bleu_validation_test.cpp.
#include "training/bleu_validation.h"

#include "common/error.h"
#include "data/corpus.h"
#include "metrics/bleu.h"

namespace moe {

BleuValidator::BleuValidator(const std::string& src_path, const std::string& ref_path, const data::Vocab& src_vocab,
                             const ValidOptions& options, BleuDecoder decoder)
    : decoder_(std::move(decoder)) {
  MOE_CHECK(decoder_,
            "valid.metric bleu / valid.bleu: this program has no decoder for BLEU validation; use "
            "valid.metric loss or ppl");
  data::ParallelText text = data::read_parallel(src_path, ref_path);
  size_t n = text.src.size();
  if (options.bleu_lines > 0) n = std::min(n, static_cast<size_t>(options.bleu_lines));
  MOE_CHECK(n > 0, "BLEU validation: ", src_path, " is empty");
  for (size_t i = 0; i < n; ++i) {
    sources_.push_back(src_vocab.encode(text.src[i]));
    refs_.push_back(std::move(text.tgt[i]));
  }
}

double BleuValidator::run(const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
                          std::vector<std::string>* hyps_out, const BuildContext& context) const {
  const std::vector<std::vector<int32_t>> best = decoder_(model, store, compute_dtype, tgt_vocab, sources_, context);
  MOE_CHECK(best.size() == sources_.size(), "BLEU validation: the decoder returned ", best.size(), " translations for ",
            sources_.size(), " sources");
  std::vector<std::string> hyps;
  hyps.reserve(best.size());
  for (const auto& tokens : best) hyps.push_back(tgt_vocab.decode(tokens));
  const double bleu = metrics::Bleu().corpus_score(hyps, {refs_}).score;
  if (hyps_out) *hyps_out = std::move(hyps);
  return bleu;
}

}  // namespace moe
