// Corpus BLEU exactly as sacreBLEU 2.x (emulated version: 2.3.1) computes it: per segment, clipped
// n-gram matches against the max count over references, hypothesis n-gram totals, hypothesis length
// and the closest reference length (ties -> shorter); summed over the corpus; then
// BLEU = BP * exp(mean_n log p_n), BP = exp(1 - r/c) if c < r, with smoothing exp/floor/add-k/none.
// Covered by tests/metrics/bleu_test.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/tokenizer.h"

namespace moe::metrics {

/// The sacreBLEU version whose behaviour and signature format we reproduce.
inline constexpr const char* k_sacrebleu_version = "2.3.1";

struct BleuOptions {
  std::string tokenize = "13a";       // 13a, intl, char, none
  bool lowercase = false;
  std::string smooth_method = "exp";  // exp, floor, add-k, none
  std::optional<double> smooth_value;  // floor: 0.1, add-k: 1 when unset
  int max_ngram_order = 4;
  bool effective_order = false;
  bool compound_split = false;        // WMT14 En-De ##AT## splitting after tokenization
};

/// Sufficient statistics: [sys_len, ref_len, correct_1..N, total_1..N], summable over segments.
struct BleuStats {
  int64_t sys_len = 0;
  int64_t ref_len = 0;
  std::vector<int64_t> correct;
  std::vector<int64_t> total;
  void add(const BleuStats& other);
};

struct BleuScore {
  double score = 0.0;
  std::vector<int64_t> counts;
  std::vector<int64_t> totals;
  std::vector<double> precisions;
  double bp = 0.0;
  int64_t sys_len = 0;
  int64_t ref_len = 0;
  double ratio = 0.0;
  /// "BLEU = 36.81 68.1/43.9/30.0/21.0 (BP = 1.000 ratio = 1.001 hyp_len = 12345 ref_len = 12330)"
  std::string format(int width = 2) const;
  /// The part after the score: "68.1/43.9/30.0/21.0 (BP = ... ref_len = N)".
  std::string verbose() const;
};

/// sacreBLEU's BLEU.compute_bleu on aggregated statistics.
BleuScore compute_bleu(const std::vector<int64_t>& correct, const std::vector<int64_t>& total,
                       int64_t sys_len, int64_t ref_len, const std::string& smooth_method,
                       std::optional<double> smooth_value, bool effective_order, int max_ngram_order);

class Bleu {
 public:
  explicit Bleu(BleuOptions options = {});

  /// Lowercase (optional), rstrip, tokenize, compound-split (optional).
  std::string preprocess(std::string_view line) const;
  /// Statistics of one hypothesis against its references (empty references are dropped, as
  /// sacreBLEU does; all-empty throws).
  BleuStats segment_stats(std::string_view hyp, const std::vector<std::string>& refs) const;
  /// refs[k][i] is line i of reference stream k; every stream must have hyps.size() lines.
  BleuScore corpus_score(const std::vector<std::string>& hyps,
                         const std::vector<std::vector<std::string>>& refs);
  BleuScore sentence_score(std::string_view hyp, const std::vector<std::string>& refs);
  BleuScore score_from_stats(const BleuStats& stats) const;

  /// "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1" (nrefs from the last scoring;
  /// "var" when segments had different reference counts).
  std::string signature() const;
  const BleuOptions& options() const { return options_; }

 private:
  BleuOptions options_;
  Tokenizer tokenizer_;
  int nrefs_ = 1;  // -1: variable
};

}  // namespace moe::metrics
