// lm_token_weights.h implementation. Covered by tests/data/lm_token_weights_test.cpp.
#include "data/lm_token_weights.h"

#include <algorithm>

#include "common/error.h"

namespace moe::data {

LmTokenWeights::LmTokenWeights(TargetWeights w, const EncodedCorpus& text, int64_t tokens_per_sample)
    : w_(std::move(w)), L_(tokens_per_sample) {
  MOE_CHECK(w_.lines() == text.size(), "LM token weights: ", w_.lines(), " lines of weights for ", text.size(),
            " lines of text");
  starts_.reserve(static_cast<size_t>(text.size()) + 1);
  int64_t p = 0;
  for (int64_t i = 0; i < text.size(); ++i) {
    starts_.push_back(p);
    p += text.length(i) + 1;  // its tokens and </s>
  }
  starts_.push_back(p);
}

int64_t LmTokenWeights::line_of(int64_t p) const {
  MOE_CHECK(p >= 0 && p < starts_.back(), "LM token weights: position ", p, " is outside the stream's ", starts_.back(),
            " tokens");
  return std::upper_bound(starts_.begin(), starts_.end(), p) - starts_.begin() - 1;
}

float LmTokenWeights::at(int64_t p) const {
  const int64_t line = line_of(p);
  return w_.at(line, p - starts_[static_cast<size_t>(line)]);
}

Tensor LmTokenWeights::of(const LmBatch& batch) const {
  const int64_t B = batch.size(), T = batch.mask.shape()[1];
  const std::vector<float> mask = batch.mask.to_vector<float>();
  std::vector<float> out(mask.size(), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t first = batch.ids[static_cast<size_t>(b)] * L_ + 1;  // the stream position of target 0
    int64_t line = -1;
    for (int64_t j = 0; j < T; ++j) {
      const auto at = static_cast<size_t>(b * T + j);
      if (mask[at] == 0.f) continue;
      const int64_t p = first + j;
      if (line < 0 || p >= starts_[static_cast<size_t>(line) + 1]) line = line_of(p);  // the row's lines in turn
      out[at] = w_.at(line, p - starts_[static_cast<size_t>(line)]);
    }
  }
  return Tensor::from_vector(out, batch.mask.shape());
}

}  // namespace moe::data
