// Weights of the training pairs' target tokens, the data weighting of moe-train (Marian's --data-weighting):
// a text file (plain or .gz) with one line per sentence pair of blank-separated numbers, finite and >= 0:
//   sentence: one weight for the whole pair;
//   word:     one per target subword token as the target vocabulary encodes it (moe-vocab encode), and
//             optionally one more for </s> (1 when absent, as Marian).
// The translation loss multiplies each target token's cross-entropy by its weight and still divides the sum by
// the batch's target tokens (Marian's ce-mean-words), so weights whose mean is 1 keep the learning rate's
// meaning:  loss = sum_{b,t} w[b,t] CE(b,t) / tokens. of() gives a batch's weights [B, T] (0 at padding).
// A causal language model's training text is weighted the same way, a line of weights per line of text (its
// tokens and </s>): data/lm_token_weights.h.
// Covered by tests/data/target_weights_test.cpp and tests/training/weighted_loss_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "data/batch.h"
#include "data/token_cache.h"

namespace moe::data {

/// How many weights a line holds: one per pair (sentence) or one per target token (word).
MOE_NAMED_ENUM(WeightingType, sentence, word)
/// What the file's lines follow, for its errors: the training pairs' targets, or a language model's text lines.
enum class WeightedLines { pairs, lm_text };

class TargetWeights {
 public:
  TargetWeights() = default;
  /// Reads `path` for the pairs whose targets are `tgt` (or the lines of a language model's text `tgt`): a line
  /// count other than theirs, a field that is not a finite number >= 0, or (word) a count other than the line's
  /// target tokens (+ 1) is an error naming the file and line.
  static TargetWeights read(const std::string& path, WeightingType type, const EncodedCorpus& tgt,
                            WeightedLines lines = WeightedLines::pairs);

  int64_t lines() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  /// The weights of pair `line`'s target tokens y </s> (sentence: its one weight repeated).
  std::vector<float> of(int64_t line, int64_t target_tokens) const;
  /// The weight of token `token` (0-based, </s> last) of line `line` (sentence: the line's one weight).
  float at(int64_t line, int64_t token) const;
  /// [B, T] f32 on the CPU for `batch` (ids are line numbers, T its padded target length): the weight of target
  /// position t of pair ids[b], 0 at the padding.
  Tensor of(const Batch& batch) const;
  /// The mean weight over every target token y </s> of the corpus (the log shows it: 1 keeps the loss's scale).
  double mean() const { return mean_; }

 private:
  WeightingType type_ = WeightingType::sentence;
  std::vector<int64_t> offsets_{0};
  std::vector<float> weights_;
  double mean_ = 1;
};

}  // namespace moe::data
