// The training batches of a language model: LmTrainStream's blocks (lm_stream.h), and for a masked
// LM each batch's input tokens dynamically masked with mask_tokens (mlm.h): input = masked x,
// target = x, mask = the selected positions. The masking draws are keyed by the batch's data
// position, step = epoch * blocks + first block, so a resumed run masks exactly as an uninterrupted
// one without extra state; a batch in which nothing was selected is passed over.
// Masked evaluation batches: the blocks in corpus order, masked once with a fixed seed, so every
// validation scores the same positions. Covered by tests/data/lm_batches_test.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "data/lm_stream.h"
#include "data/mlm.h"
#include "data/prefetcher.h"

namespace moe::data {

class LmBatchStream {
 public:
  using State = LmTrainStream::State;
  /// `mlm` set: masked-LM batches (its seed keys the draws); unset: next-token batches.
  LmBatchStream(LmTrainStream stream, std::optional<MlmOptions> mlm = std::nullopt);
  /// The next batch; std::nullopt at the end of an epoch (the epoch advances).
  std::optional<LmBatch> next();
  State state() const { return stream_.state(); }
  void restore(const State& s) { stream_.restore(s); }
  int64_t blocks() const { return stream_.blocks(); }

 private:
  LmTrainStream stream_;
  std::optional<MlmOptions> mlm_;
};

/// LM training batches on a background thread (see prefetcher.h).
using LmBatchPrefetcher = Prefetcher<LmBatchStream>;

/// Masked-LM evaluation batches over `stream`: blocks of `tokens_per_sample` in order, `batch_size`
/// per batch, masked with `mlm` (seed included) and step = batch index. Batches where nothing was
/// selected are left out.
std::vector<LmBatch> masked_eval_batches(const std::vector<int32_t>& stream, int64_t tokens_per_sample,
                                         int64_t batch_size, const MlmOptions& mlm);

}  // namespace moe::data
