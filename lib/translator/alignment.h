// Word alignments of translations (Marian's --alignment). The alignment of an output is the attention of the
// model's alignment head (Decoder::alignment: the first head of the last decoder layer's cross-attention, or an
// LSTM's attention) over the source while the model reads that output: one teacher-forced pass over the finished
// hypotheses of a batch, which gives the weights the search's own steps computed, without keeping them through
// the search. A soft alignment holds, per output position t (the output's tokens, then its </s>), the weights over
// the source positions (the source's tokens, then its </s>), all counted in subword tokens as Marian counts them.
// Written as Marian writes it:
//   hard       each output position with its most attended source position: "s-t" pairs in output order;
//   THRESHOLD  every pair whose weight exceeds THRESHOLD (0 <= THRESHOLD < 1; 1 is hard);
//   soft       per output position its weights over the source joined by ',', positions separated by ' '.
// With AlignmentOutput::words the links join words instead of tokens (for AER against word-level gold links,
// moe-score aer): each token belongs to a word (a SentencePiece piece beginning with "\u2581" begins one, a word
// list's tokens are words), a pair of words is linked when any of their tokens are, and links at </s> are dropped.
// An alignment from a model trained without alignment guidance is only as good as its attention head.
// Covered by tests/translator/alignment_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "data/vocab.h"
#include "data/word_alignments.h"
#include "layers/builder.h"
#include "models/decoder.h"
#include "translator/beam_search.h"

namespace moe {

MOE_NAMED_ENUM(AlignmentKind, hard, soft, threshold)

/// How alignments are written.
struct AlignmentOutput {
  AlignmentKind kind = AlignmentKind::hard;
  float threshold = 1;  // AlignmentKind::threshold: the least weight a pair must exceed
  bool words = false;   // links between words, not subword tokens (hard and threshold only)
  /// "hard", "soft" or a number in [0, 1] (1 = hard); an error names `option` and the value.
  static AlignmentOutput parse(const std::string& text, const std::string& option);
  bool operator==(const AlignmentOutput&) const = default;
};

/// The word (0-based) of each token of `ids`, then -1 for the </s> after them.
std::vector<int32_t> token_words(const data::Vocab& vocab, const std::vector<int32_t>& ids);

/// The words of a pair's tokens (token_words of its source and of its output).
struct TokenWords {
  std::vector<int32_t> source, output;
};

/// `links` between tokens as links between their words: each pair of words once, in output then source order;
/// links at </s> are dropped.
std::vector<data::WordLink> word_links(const std::vector<data::WordLink>& links, const TokenWords& words);

/// The links `o` (hard or threshold) keeps of `alignment` (source position, output position as the target, weight
/// 1), in output order, then source order; with o.words, between the words of `words` (word_links).
std::vector<data::WordLink> alignment_links(const SoftAlignment& alignment, const AlignmentOutput& o,
                                            const TokenWords& words = {});

/// `alignment` ([output position][source position]) as `o` writes it; `words` is read when o.words.
std::string format_alignment(const SoftAlignment& alignment, const AlignmentOutput& o, const TokenWords& words = {});

/// Sets the alignment of every hypothesis in `found` (found[i]: the hypotheses of sources[i], a source without its
/// </s>), in one teacher-forced pass of `decoder` in b's graph.
void align_hypotheses(const Decoder& decoder, const Builder& b, const std::vector<const std::vector<int32_t>*>& sources,
                      std::vector<std::vector<Hypothesis>>& found);

}  // namespace moe
