// bleu_validation.h implementation (the decoding part needs lib/translator; see available()).
// Covered by tests/training/bleu_validation_test.cpp.
#include "training/bleu_validation.h"

#include "common/error.h"
#include "data/corpus.h"
#include "metrics/bleu.h"
#if __has_include("translator/translator.h")
#include "translator/translator.h"
#define MOE_HAS_TRANSLATOR 1
#else
#define MOE_HAS_TRANSLATOR 0
#endif

namespace moe {

bool BleuValidator::available() { return MOE_HAS_TRANSLATOR != 0; }

BleuValidator::BleuValidator(const std::string& src_path, const std::string& ref_path, const data::Vocab& src_vocab,
                             const ValidOptions& options, int64_t max_tokens)
    : o_(options), max_tokens_(max_tokens) {
  data::ParallelText text = data::read_parallel(src_path, ref_path);
  size_t n = text.src.size();
  if (o_.bleu_lines > 0) n = std::min(n, static_cast<size_t>(o_.bleu_lines));
  MOE_CHECK(n > 0, "BLEU validation: ", src_path, " is empty");
  for (size_t i = 0; i < n; ++i) {
    sources_.push_back(src_vocab.encode(text.src[i]));
    refs_.push_back(std::move(text.tgt[i]));
  }
}

double BleuValidator::run(const Model& model, ParameterStore& store, DType compute_dtype, const data::Vocab& tgt_vocab,
                          std::vector<std::string>* hyps_out) const {
#if MOE_HAS_TRANSLATOR
  const Transformer* net = model.seq2seq();
  MOE_CHECK(net, "BLEU validation: model type '", model.type(), "' has no encoder-decoder to decode with");
  TranslatorOptions to;
  to.search.beam = o_.beam;
  to.search.n_best = 1;
  to.search.lenpen = o_.lenpen;
  to.search.max_len_a = o_.max_len_a;
  to.search.max_len_b = o_.max_len_b;
  to.max_tokens = max_tokens_;
  to.dtype = compute_dtype;
  const Translator translator(*net, store, store.device(), to);
  // Sources past the position limit are cut (the reference still counts in full).
  std::vector<std::vector<int32_t>> sources = sources_;
  for (auto& s : sources)
    if (static_cast<int64_t>(s.size()) > translator.max_source_tokens())
      s.resize(static_cast<size_t>(translator.max_source_tokens()));
  const auto nbest = translator.translate(sources);
  std::vector<std::string> hyps;
  hyps.reserve(nbest.size());
  for (const auto& list : nbest) hyps.push_back(list.empty() ? std::string() : tgt_vocab.decode(list[0].tokens));
  const double bleu = metrics::Bleu().corpus_score(hyps, {refs_}).score;
  if (hyps_out) *hyps_out = std::move(hyps);
  return bleu;
#else
  (void)model, (void)store, (void)compute_dtype, (void)tgt_vocab, (void)hyps_out;
  MOE_FAIL(
      "BLEU validation needs lib/translator (translator/translator.h), which this build does not have; "
      "use valid.metric loss or ppl");
#endif
}

}  // namespace moe
