// Word alignments of a parallel corpus, the guidance of guided-alignment training (Marian's --guided-alignment,
// training/guided_alignment.h): a text file with one line per sentence pair of "s-t" links separated by blanks,
// s and t 0-based positions of the pair's source and target subword tokens as the vocabularies encode them
// (moe-vocab encode, or moe-vocab lex --alignments), an empty line for a pair without links. Fast_align's and
// Marian's format: a link may carry a weight "s-t:w" (w in (0, 1]; 1 when absent), a line "s-t s-t ...".
// Each link is checked against its pair's token counts. guidance() turns a batch's links into the matrix the
// cost compares the attention with: per target position t with links, the links' weights normalised to sum 1
// over the source positions; rows without links are zero. Covered by tests/data/word_alignments_test.cpp.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "data/batch.h"
#include "data/token_cache.h"

namespace moe::data {

struct WordLink {
  int32_t source = 0, target = 0;
  float weight = 1;
  bool operator==(const WordLink&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const WordLink& l) {
    return os << l.source << '-' << l.target << ':' << l.weight;
  }
};

class WordAlignments {
 public:
  WordAlignments() = default;
  /// One line of links per pair: `links[i]` for the pair of `src` line i and `tgt` line i (token counts checked).
  WordAlignments(const std::vector<std::vector<WordLink>>& links, const EncodedCorpus& src, const EncodedCorpus& tgt);
  /// Reads `path` (plain or .gz) for the pairs of `src` and `tgt`: a line count other than theirs, a malformed
  /// link or one past its pair's tokens is an error naming the file and line.
  static WordAlignments read(const std::string& path, const EncodedCorpus& src, const EncodedCorpus& tgt);

  int64_t lines() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t links() const { return static_cast<int64_t>(links_.size()); }
  std::vector<WordLink> of(int64_t line) const;
  /// [B, T, S] f32 on the CPU for `batch` (its ids are line numbers; T and S its padded target and source
  /// lengths): guidance[b, t, s] = the weight of link s-t of pair ids[b] over the sum of its row's weights.
  Tensor guidance(const Batch& batch) const;

 private:
  /// Adds the links of the next pair, checked against its token counts.
  void append(const std::vector<WordLink>& line, const EncodedCorpus& src, const EncodedCorpus& tgt);
  std::vector<int64_t> offsets_{0};
  std::vector<WordLink> links_;
};

/// Parses one line of links ("0-0 1-2:0.5 ..."); an error says what is wrong and where in the line.
std::vector<WordLink> parse_word_links(std::string_view line);

/// One line of links as parse_word_links reads them and Marian writes them: "s-t" pairs separated by spaces (the
/// weights are not written).
std::string format_word_links(const std::vector<WordLink>& links);

}  // namespace moe::data
