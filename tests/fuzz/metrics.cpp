// Fuzzes the scoring of moe-score (lib/metrics): the 13a, intl, char, none and zh tokenizers, lowercasing
// (Python's str.lower), BLEU with every smoothing and chrF/chrF++ on arbitrary bytes. Input: byte 0
// picks tokenizer, lowercase, smoothing and chrF's options; the rest, split at '\n', alternates
// hypothesis and reference lines. Invariants: the one rejection is a moe::Error for a segment whose
// references are all empty (as sacreBLEU's); scores are finite and within [0, 100]; a tokenizer keeps
// valid UTF-8 valid. Seeds: tests/fuzz/seeds/metrics.
#include <cmath>

#include "data/utf8.h"
#include "fuzz_support.h"
#include "metrics/bleu.h"
#include "metrics/chrf.h"
#include "metrics/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* kTokenizers[] = {"13a", "intl", "char", "none", "zh"};
  static const char* kSmooth[] = {"exp", "floor", "add-k", "none"};
  const uint8_t pick = data[0];
  const auto lines = moe::fuzz::split(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), '\n');
  std::vector<std::string> hyps, refs;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    hyps.push_back(lines[i]);
    refs.push_back(lines[i + 1]);
  }
  moe::metrics::BleuOptions bo;
  bo.tokenize = kTokenizers[pick % 5];
  bo.lowercase = (pick & 8) != 0;
  bo.smooth_method = kSmooth[(pick >> 4) % 4];
  bo.effective_order = (pick & 64) != 0;
  moe::metrics::ChrfOptions co;
  co.word_order = (pick & 128) ? 2 : 0;
  co.lowercase = bo.lowercase;
  co.whitespace = (pick & 64) != 0;

  const moe::metrics::Tokenizer tokenize = moe::metrics::make_tokenizer(bo.tokenize);
  for (const auto& l : lines)
    if (moe::data::is_valid_utf8(l))
      FUZZ_REQUIRE(moe::data::is_valid_utf8(tokenize(l)), std::string("tokenizer ") + bo.tokenize + " broke UTF-8");
  const auto in_range = [](double s) { return std::isfinite(s) && s >= 0.0 && s <= 100.0 + 1e-9; };
  moe::metrics::Bleu bleu(bo);
  moe::metrics::Chrf chrf(co);
  moe::fuzz::accepts(
      [&] {
        const auto b = bleu.corpus_score(hyps, {refs});
        FUZZ_REQUIRE(in_range(b.score), "a corpus BLEU outside [0, 100]: " + b.format());
      },
      "empty reference");
  moe::fuzz::accepts(
      [&] {
        const auto c = chrf.corpus_score(hyps, {refs});
        FUZZ_REQUIRE(in_range(c.score), "a corpus chrF outside [0, 100]: " + c.format());
      },
      "empty reference");
  for (size_t i = 0; i < hyps.size(); ++i) {
    if (refs[i].empty()) continue;
    FUZZ_REQUIRE(in_range(bleu.sentence_score(hyps[i], {refs[i]}).score), "a sentence BLEU outside [0, 100]");
    FUZZ_REQUIRE(in_range(chrf.sentence_score(hyps[i], {refs[i]}).score), "a sentence chrF outside [0, 100]");
  }
  return 0;
}
