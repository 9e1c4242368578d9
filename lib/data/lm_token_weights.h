// Data weighting of a causal language model's training text (moe-train data.train.weights with model.type
// transformer_lm or lstm_lm): the weights file has a line per line of data.train.text (data/target_weights.h:
// sentence = one weight for the line, word = one per token and optionally one for </s>), read along the token
// stream as flatten_stream lays the lines (x_1 .. x_n </s> of each line in turn), so that the weight of stream
// position p is that of the token at p: its line is the last one that starts at or before p. A training block k
// (LmTrainStream, L = tokens_per_sample) predicts stream positions kL+1 .. kL+L, so its target j weighs w(kL + 1 + j):
// a block that crosses lines weighs each target by its own line. Nothing is copied per token beyond what the file
// holds (a 1B-word stream's per-token floats would be 3 GB). The loss is sum w CE / tokens, as for translation
// (models/transformer_lm.h). Covered by tests/data/lm_token_weights_test.cpp and
// tests/training/lm_weighted_loss_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "data/target_weights.h"
#include "data/token_cache.h"

namespace moe::data {

class LmTokenWeights {
 public:
  /// The weights `w` of the lines of `text` (read with WeightedLines::lm_text), for blocks of `tokens_per_sample`.
  LmTokenWeights(TargetWeights w, const EncodedCorpus& text, int64_t tokens_per_sample);
  /// The weight of the token at stream position `p`.
  float at(int64_t p) const;
  /// [B, T] f32 on the CPU: the weight of each target of `batch` (an LmTrainStream batch: ids are block indices), 0
  /// where its mask is 0.
  Tensor of(const LmBatch& batch) const;

 private:
  /// The line holding stream position `p`.
  int64_t line_of(int64_t p) const;
  TargetWeights w_;
  std::vector<int64_t> starts_;  // each line's first stream position, then the stream's length
  int64_t L_;
};

}  // namespace moe::data
