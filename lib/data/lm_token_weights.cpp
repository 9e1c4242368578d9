// lm_token_weights.h implementation. Covered by tests/data/lm_token_weights_test.cpp.
#include "data/lm_token_weights.h"

#include "common/error.h"

namespace moe::data {

LmTokenWeights::LmTokenWeights(const TargetWeights& w, const EncodedCorpus& text, int64_t tokens_per_sample)
    : L_(tokens_per_sample) {
  MOE_CHECK(w.lines() == text.size(), "LM token weights: ", w.lines(), " lines of weights for ", text.size(),
            " lines of text");
  stream_.reserve(static_cast<size_t>(text.tokens() + text.size()));
  for (int64_t i = 0; i < text.size(); ++i) {
    const std::vector<float> line = w.of(i, text.length(i) + 1);  // its tokens and </s>
    stream_.insert(stream_.end(), line.begin(), line.end());
  }
}

Tensor LmTokenWeights::of(const LmBatch& batch) const {
  const int64_t B = batch.size(), T = batch.mask.shape()[1];
  const std::vector<float> mask = batch.mask.to_vector<float>();
  std::vector<float> out(mask.size(), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t first = batch.ids[static_cast<size_t>(b)] * L_ + 1;  // the stream position of target 0
    for (int64_t j = 0; j < T; ++j) {
      const auto at = static_cast<size_t>(b * T + j);
      if (mask[at] == 0.f) continue;
      MOE_CHECK(first + j < static_cast<int64_t>(stream_.size()), "LM token weights: block ", batch.ids[b], " target ",
                j, " is past the stream's ", stream_.size(), " tokens");
      out[at] = stream_[static_cast<size_t>(first + j)];
    }
  }
  return Tensor::from_vector(out, batch.mask.shape());
}

}  // namespace moe::data
