// Lexical translation probabilities p(target token | source token), the table a decoding shortlist is built from
// (translator/shortlist.h), stored in Marian's lex.s2t text format: one "target source probability" line per
// pair, the tokens written as pieces of the two vocabularies. train_lexical_table estimates it from token ids of
// a parallel corpus with IBM Model 1 (Brown et al. 1993): EM with a NULL word on every source side, t started
// uniform,
//   E: c(e_j, f_i) += t(e_j | f_i) / sum_i' t(e_j | f_i')        M: t(e | f) = c(e, f) / sum_e' c(e', f)
// keeping after each iteration only the pairs with t >= prune (memory grows with the distinct co-occurring pairs).
// Covered by tests/data/lexical_table_test.cpp.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace moe::data {

struct LexicalEntry {
  int32_t source = 0, target = 0;
  float prob = 0;
  bool operator==(const LexicalEntry&) const = default;
};

/// Entries sorted by source id, then probability descending, then target id.
struct LexicalTable {
  std::vector<LexicalEntry> entries;
};

struct Model1Options {
  int iterations = 5;   // EM iterations
  double prune = 1e-3;  // pairs below this probability are dropped after each iteration
};

/// IBM Model 1 over sentence pairs of token ids (without <s> / </s>); pairs with an empty side are skipped.
/// The NULL word's entries are not in the result.
LexicalTable train_lexical_table(const std::vector<std::vector<int32_t>>& sources,
                                 const std::vector<std::vector<int32_t>>& targets, const Model1Options& options);

/// Writes "target source probability" lines (pieces of `tgt` and `src`).
void write_lexical_table(const LexicalTable& table, const Vocab& src, const Vocab& tgt, std::ostream& out);

/// Reads a lex.s2t file (plain or .gz) against the two vocabularies. A line without three fields or with a
/// probability that is not a number in [0, 1] is an error naming the file and line; pairs whose pieces are not
/// in the vocabularies are skipped and counted in `skipped` (Marian's tables hold words a vocabulary lacks).
LexicalTable read_lexical_table(const std::string& path, const Vocab& src, const Vocab& tgt, int64_t* skipped);

}  // namespace moe::data
