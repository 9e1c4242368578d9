// Alignment error rate (Och & Ney 2003, "A Systematic Comparison of Various Statistical Alignment Models"): of
// hypothesis links A against gold sure links S and possible links P (S is part of P),
//   AER = 1 - (|A & S| + |A & P|) / (|A| + |S|),   precision = |A & P| / |A|,   recall = |A & S| / |S|,
// summed over the corpus before the division. Gold lines hold "s-t" sure links and "s?t" or "spt" possible ones
// (the talp format of the Europarl and Hansards gold sets), hypothesis lines "s-t" links (a ":weight" is read and
// ignored, as fast_align and Marian write them); positions count from 0, or from 1 with one_based. Covered by
// tests/metrics/aer_test.cpp.
#pragma once
#include <cstdint>
#include <set>
#include <string_view>
#include <utility>

namespace moe::metrics {

using Link = std::pair<int32_t, int32_t>;  // source position, target position (0-based)

struct GoldLinks {
  std::set<Link> sure, possible;  // possible holds the sure links too
};

/// One gold line; an error says which link is malformed.
GoldLinks parse_gold_links(std::string_view line, bool one_based = false);
/// One hypothesis line ("s-t" or "s-t:w" links; a possible link is an error: hypotheses are one kind of link).
std::set<Link> parse_hypothesis_links(std::string_view line, bool one_based = false);

struct AerCounts {
  int64_t hypothesis = 0, sure = 0, possible = 0, hit_sure = 0, hit_possible = 0;  // |A|, |S|, |P|, |A & S|, |A & P|
  void add(const std::set<Link>& hypothesis, const GoldLinks& gold);
  double aer() const;        // 0 without links on either side
  double precision() const;  // 1 without hypothesis links
  double recall() const;     // 1 without sure links
};

}  // namespace moe::metrics
