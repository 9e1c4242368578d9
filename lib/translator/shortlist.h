// Lexical shortlists (Marian's --shortlist): a batch's search scores only the target tokens its sources make
// likely instead of the whole vocabulary, so the output layer multiplies V' of its V weight rows and the
// log-softmax and top-k run over V' columns. A batch's list is the union, in ascending id order, of
//   the first `first` ids of the target vocabulary (its most frequent tokens, in frequency-ordered vocabularies),
//   for each source token of the batch its `best` most probable translations with p(target | source) >= threshold
//   (a lexical table: data/lexical_table.h, made by `moe-vocab lex` or any lex.s2t file),
//   the special ids (<pad>, <unk>, <s>, </s>) and the tokens of the batch's forced prefixes.
// The search runs over the list's columns: BatchShortlist maps the search's ids (specials, prefixes, the tokens it
// chooses) between target ids and columns. Probabilities are normalised over the list, as Marian's are, so scores
// differ from a search over the whole vocabulary; a list holding every id gives the same search.
// Covered by tests/translator/shortlist_test.cpp.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "data/lexical_table.h"
#include "translator/beam_search.h"

namespace moe {

struct ShortlistOptions {
  int64_t first = 100;   // the first ids of the target vocabulary, always in the list
  int64_t best = 100;    // translations per source token
  double threshold = 0;  // the least p(target | source) a translation needs
};

/// The columns of one batch's search and their target ids.
class BatchShortlist {
 public:
  /// `ids`: ascending target ids, column j scoring ids[j].
  explicit BatchShortlist(std::vector<int32_t> ids);
  const std::vector<int32_t>& ids() const { return ids_; }
  /// The column of target id `id` (an error when the list lacks it).
  int32_t column(int32_t id) const;
  /// The search options with their target ids (pad, <s>, </s>, <unk>) as columns.
  BeamOptions to_columns(BeamOptions o) const;
  /// The prefixes' tokens as columns.
  TargetPrefixes to_columns(const TargetPrefixes& prefixes) const;
  /// Columns back to target ids, in place.
  void to_ids(std::vector<int32_t>& columns) const;

 private:
  std::vector<int32_t> ids_;
};

class Shortlist {
 public:
  /// `table` over a target vocabulary of `target_vocab` ids (checked).
  Shortlist(const data::LexicalTable& table, int32_t target_vocab, ShortlistOptions options);
  /// The list of a batch of `sources` (token ids) with `prefixes` (none, or one per source) and `specials`.
  BatchShortlist batch(const std::vector<const std::vector<int32_t>*>& sources, const TargetPrefixes& prefixes,
                       const std::vector<int32_t>& specials) const;
  /// The lists made so far (batch() calls) and their mean width, for summaries.
  int64_t lists() const { return lists_; }
  double mean_width() const { return lists_ ? static_cast<double>(widths_) / static_cast<double>(lists_) : 0.0; }

 private:
  int32_t vocab_;
  ShortlistOptions o_;
  mutable std::atomic<int64_t> lists_{0}, widths_{0};
  std::vector<int64_t> begin_;  // the translations of source id s: translations_[begin_[s], begin_[s + 1])
  std::vector<int32_t> translations_;
};

}  // namespace moe
