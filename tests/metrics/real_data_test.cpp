// BLEU/chrF on real data (WMT14 newstest2014.de from MOE_SHARED_DATA) against deterministic
// perturbations of it. Expected values come from a line-by-line Python port of sacreBLEU 2.x's
// scoring code (bleu.py, chrf.py, helpers.py; tokenizers via Python's re / regex modules), run on
// the same perturbations; our 13a and intl tokenizers also matched Python's output byte for byte on
// every shared corpus (multi30k, wmt14, bible, wikitext) when this was written.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "metrics/bleu.h"
#include "metrics/chrf.h"
#include "metrics/read_lines.h"
#include "metrics/text.h"

using namespace moe::metrics;

namespace {
// Drops word j of line i when (i + j) % m == k (words split on ' ' exactly, as Python's
// str.split(' ')), and lowercases line i when i % lc_mod == 0.
std::vector<std::string> perturb(const std::vector<std::string>& lines, int m, int k, int lc_mod) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string s;
    std::size_t start = 0, j = 0;
    bool first = true;
    while (true) {
      std::size_t sp = lines[i].find(' ', start);
      std::string w = lines[i].substr(start, sp == std::string::npos ? std::string::npos : sp - start);
      if (static_cast<int>((i + j) % m) != k) {
        if (!first) s += ' ';
        s += w;
        first = false;
      }
      ++j;
      if (sp == std::string::npos) break;
      start = sp + 1;
    }
    out.push_back(i % lc_mod == 0 ? py_lower(s) : s);
  }
  return out;
}
}  // namespace

TEST_CASE("BLEU and chrF on newstest2014.de match sacreBLEU's arithmetic", "[metrics][data]") {
  const std::string path = std::string(MOE_SHARED_DATA) + "/wmt14-ende/newstest2014.de";
  if (!std::filesystem::exists(path)) {
    WARN("skipping: " << path << " not found");
    return;
  }
  const auto ref = read_lines(path);
  REQUIRE(ref.size() == 3003);
  const auto hyp = perturb(ref, 7, 3, 5);
  const auto ref2 = perturb(ref, 5, 1, 1000000);
  CHECK(std::abs(Bleu().corpus_score(hyp, {ref}).score - 57.54629521) < 1e-6);
  BleuOptions intl;
  intl.tokenize = "intl";
  CHECK(std::abs(Bleu(intl).corpus_score(hyp, {ref}).score - 58.11129460) < 1e-6);
  CHECK(std::abs(Bleu().corpus_score(hyp, {ref, ref2}).score - 72.42232677) < 1e-6);
  CHECK(std::abs(Chrf().corpus_score(hyp, {ref}).score - 80.08184546) < 1e-6);
  ChrfOptions pp;
  pp.word_order = 2;
  CHECK(std::abs(Chrf(pp).corpus_score(hyp, {ref}).score - 78.82968760) < 1e-6);
  CHECK(std::abs(Chrf().corpus_score(hyp, {ref, ref2}).score - 80.46776725) < 1e-6);
}
