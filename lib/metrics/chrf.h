// chrF / chrF++ exactly as sacreBLEU 2.x (2.3.1): character n-grams of orders 1..char_order on the
// line with whitespace removed (unless whitespace=true), word n-grams 1..word_order after chrF's
// punctuation splitting; per order [hyp, ref, match] counts, best reference by F per segment, summed
// over the corpus; score = F_beta of the averaged precision/recall over the effective orders
// (default), or the mean per-order F with eps = 1e-16 (eps_smoothing, as chrF++.py).
// Covered by tests/metrics/chrf_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moe::metrics {

struct ChrfOptions {
  int char_order = 6;
  int word_order = 0;  // 2: chrF++
  int beta = 2;
  bool lowercase = false;
  bool whitespace = false;
  bool eps_smoothing = false;
};

struct ChrfScore {
  double score = 0.0;
  std::string name;                // "chrF2", "chrF2++"
  std::vector<int64_t> stats;      // per order: hyp, ref, match
  std::string format(int width = 2) const;  // "chrF2 = 59.73"
};

class Chrf {
 public:
  explicit Chrf(ChrfOptions options = {});
  /// Best-F statistics of one hypothesis against its non-empty references (3 * order values).
  std::vector<int64_t> segment_stats(std::string_view hyp, const std::vector<std::string>& refs) const;
  /// refs[k][i] is line i of reference stream k.
  ChrfScore corpus_score(const std::vector<std::string>& hyps,
                         const std::vector<std::vector<std::string>>& refs);
  ChrfScore sentence_score(std::string_view hyp, const std::vector<std::string>& refs);
  /// The F score (0..100) of summed statistics.
  double f_score(const std::vector<int64_t>& stats) const;
  /// "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.3.1"
  std::string signature() const;
  const ChrfOptions& options() const { return options_; }

 private:
  ChrfOptions options_;
  int nrefs_ = 1;
};

/// chrF++'s word splitting: str.split(), then a word longer than one character loses a trailing
/// ASCII punctuation mark (or else a leading one) into its own token.
std::vector<std::string> chrf_words(std::string_view line);

}  // namespace moe::metrics
