// Validation during training: the summed cross-entropy (no label smoothing) over the valid set,
// batched once in corpus order (no shuffling), computed in an inference graph (no tape, no dropout)
// with the training compute dtype; loss per target token and perplexity = exp(loss).
// BLEU validation (decoding the valid set) is bleu_validation.h.
// Covered by tests/training/resume_test.cpp (loss values against a hand-summed graph loss).
#pragma once
#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "data/batch_upload.h"
#include "data/token_cache.h"
#include "graph/parameters.h"
#include "models/model.h"
#include "training/progress.h"

namespace moe {

struct ValidBatchOptions {
  int64_t max_tokens = 4096;
  int64_t max_len = 0;  // pairs with a longer side are left out (the model's position limit); 0 = none
  int32_t pad_id = 0, bos_id = 2, eos_id = 3;
};

class Validator {
 public:
  /// Batches the whole valid set once (corpus order). Errors when no pair is usable.
  Validator(const data::EncodedCorpus& src, const data::EncodedCorpus& tgt, const ValidBatchOptions& options);
  /// Loss figures of `model` with the parameters in `store` (epoch, update, improved left for the caller).
  ValidFigures run(const Model& model, ParameterStore& store, DType compute_dtype, data::BatchUploader& uploader,
                   const BuildContext& context = {}) const;
  int64_t sentences() const { return sentences_; }
  int64_t dropped() const { return dropped_; }

 private:
  std::vector<data::Batch> batches_;
  int64_t sentences_ = 0, tokens_ = 0, dropped_ = 0;
};

}  // namespace moe
