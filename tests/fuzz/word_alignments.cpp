// Fuzzes word-alignment files (lib/data/word_alignments.cpp: one line of "s-t" or "s-t:w" links per training pair,
// plain or gzip), as moe-train's data.train.alignment reads them, and the guidance matrices of batches over them.
// Invariants: a bad file is a moe::Error naming the file; an accepted one has a line per pair and every link inside
// its pair's tokens with a weight in (0, 1]; the guidance of a batch of every pair has finite entries in [0, 1]
// whose rows sum to 1 (a target token with links) or 0. Seeds: tests/fuzz/seeds/word_alignments.
#include "data/word_alignments.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Three pairs of 3/2, 1/4 and 5/5 tokens.
  static const moe::data::EncodedCorpus src({4, 4, 4, 4, 4, 4, 4, 4, 4}, {0, 3, 4, 9}),
      tgt({5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, {0, 2, 6, 11});
  const std::string path =
      moe::fuzz::write_file("train.align", std::string_view(reinterpret_cast<const char*>(data), size));
  moe::data::WordAlignments a;
  if (!moe::fuzz::accepts([&] { a = moe::data::WordAlignments::read(path, src, tgt); }, path)) return 0;
  FUZZ_REQUIRE(a.lines() == src.size(), "a line count other than the pairs'");
  std::vector<std::vector<int32_t>> s, t;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < a.lines(); ++i) {
    for (const moe::data::WordLink& l : a.of(i))
      FUZZ_REQUIRE(l.source >= 0 && l.source < src.length(i) && l.target >= 0 && l.target < tgt.length(i) &&
                       l.weight > 0 && l.weight <= 1,
                   "a link outside its pair or with a weight outside (0, 1]");
    const auto ss = src.sentence(i), ts = tgt.sentence(i);
    s.emplace_back(ss.begin(), ss.end());
    t.emplace_back(ts.begin(), ts.end());
    ids.push_back(a.lines() - 1 - i);  // the batch in reverse order
  }
  std::reverse(s.begin(), s.end());
  std::reverse(t.begin(), t.end());
  std::vector<std::span<const int32_t>> sv(s.begin(), s.end()), tv(t.begin(), t.end());
  const moe::Tensor g = a.guidance(moe::data::make_batch(sv, tv, ids, 0, 1, 2));
  const std::vector<float> v = g.to_vector<float>();
  const auto S = static_cast<size_t>(g.shape()[2]);
  for (size_t row = 0; row < v.size(); row += S) {
    double sum = 0;
    for (size_t k = row; k < row + S; ++k) {
      FUZZ_REQUIRE(std::isfinite(v[k]) && v[k] >= 0 && v[k] <= 1, "a guidance entry outside [0, 1]");
      sum += v[k];
    }
    FUZZ_REQUIRE(sum == 0 || std::abs(sum - 1) < 1e-5, "a guidance row that sums to neither 0 nor 1");
  }
  return 0;
}
