// lm_batches.h implementation. Covered by tests/data/lm_batches_test.cpp.
#include "data/lm_batches.h"

#include "common/error.h"

namespace moe::data {

LmBatchStream::LmBatchStream(LmTrainStream stream, std::optional<MlmOptions> mlm)
    : stream_(std::move(stream)), mlm_(std::move(mlm)) {}

std::optional<LmBatch> LmBatchStream::next() {
  while (true) {
    const State at = stream_.state();
    std::optional<LmBatch> b = stream_.next();
    if (!b || !mlm_) return b;
    const auto step = static_cast<uint64_t>(at.epoch * stream_.blocks() + at.position);
    LmBatch masked = mask_tokens(b->input, *mlm_, step);
    masked.ids = std::move(b->ids);
    if (masked.tokens > 0) return masked;
  }
}

std::vector<LmBatch> masked_eval_batches(const std::vector<int32_t>& stream, int64_t tokens_per_sample,
                                         int64_t batch_size, const MlmOptions& mlm) {
  LmTrainStream blocks(stream, tokens_per_sample, batch_size, mlm.seed, /*shuffle=*/false, mlm.pad_id);
  std::vector<LmBatch> out;
  uint64_t step = 0;
  while (std::optional<LmBatch> b = blocks.next()) {
    LmBatch masked = mask_tokens(b->input, mlm, step++);
    masked.ids = std::move(b->ids);
    if (masked.tokens > 0) out.push_back(std::move(masked));
  }
  MOE_CHECK(!out.empty(), "masked_eval_batches: no token of the ", stream.size(),
            "-token stream was selected for masking (mask_prob ", mlm.mask_prob, ")");
  return out;
}

}  // namespace moe::data
