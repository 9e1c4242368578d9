// Lexical translation probabilities p(target token | source token), the table a decoding shortlist is built from
// (translator/shortlist.h), stored in Marian's lex.s2t text format: one "target source probability" line per
// pair, the tokens written as pieces of the two vocabularies. train_lexical_table estimates it from token ids of
// a parallel corpus with IBM Model 1 (Brown et al. 1993): EM with a NULL word on every source side, t started
// uniform,
//   E: c(e_j, f_i) += t(e_j | f_i) / sum_i' t(e_j | f_i')        M: t(e | f) = c(e, f) / sum_e' c(e', f)
// keeping after each iteration only the pairs with t >= prune (memory grows with the distinct co-occurring pairs).
// With a diagonal tension lambda > 0 it is fast_align's model (Dyer et al. 2013, IBM Model 2 with a diagonal prior):
// each term of the E-step is weighted by p(i | j) = 0.08 for NULL, else 0.92 exp(-lambda |i/I - j/J|) / Z_j.
// The same posteriors give each pair's Viterbi word alignment (each target word linked to its most probable
// source word, none when NULL wins), the guidance of guided-alignment training (data/word_alignments.h).
// Covered by tests/data/lexical_table_test.cpp.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "data/word_alignments.h"

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
  double diagonal = 0;  // fast_align's diagonal tension (its -d uses 4); 0: IBM Model 1
};

/// IBM Model 1 over sentence pairs of token ids (without <s> / </s>); pairs with an empty side are skipped.
/// The NULL word's entries are not in the result. `alignments` (optional) receives each pair's Viterbi links
/// (positions in the pair's token ids; none for a pair with an empty side).
LexicalTable train_lexical_table(const std::vector<std::vector<int32_t>>& sources,
                                 const std::vector<std::vector<int32_t>>& targets, const Model1Options& options,
                                 std::vector<std::vector<WordLink>>* alignments = nullptr);

/// Writes "target source probability" lines (pieces of `tgt` and `src`).
void write_lexical_table(const LexicalTable& table, const Vocab& src, const Vocab& tgt, std::ostream& out);

/// Reads a lex.s2t file (plain or .gz) against the two vocabularies. A line without three fields or with a
/// probability that is not a number in [0, 1] is an error naming the file and line; pairs whose pieces are not
/// in the vocabularies are skipped and counted in `skipped` (Marian's tables hold words a vocabulary lacks).
LexicalTable read_lexical_table(const std::string& path, const Vocab& src, const Vocab& tgt, int64_t* skipped);

}  // namespace moe::data
