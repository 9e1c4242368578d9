// Language-model evaluation sums: the summed negative log-likelihood (Model::lm_loss, no label
// smoothing, inference graph: no tape, no dropout) and the scored tokens over a list of LmBatches
// (Baevski & Auli windows from data::eval_batches, or masked blocks for a masked LM), so
//   loss per token = nll / tokens,   perplexity = exp(nll / tokens).
// Used by moe-train's LM validation (lm_task.h) and by moe-score ppl (translator/lm_perplexity.h).
// Covered by tests/training/lm_train_test.cpp and tests/translator/scoring_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "data/batch.h"
#include "data/batch_upload.h"
#include "graph/parameters.h"
#include "models/model.h"

namespace moe {

struct LmEvalSum {
  double nll = 0;      // natural log
  int64_t tokens = 0;  // scored targets
};

/// Sums over `batches` (CPU) on the store's device; `uploader` moves them there. `on_batch(tokens)`
/// (optional) gets the tokens scored so far after each batch (progress reports). `context`: the graphs'
/// run-time settings (a training run's communicator: expert-parallel MoE layers evaluate together).
LmEvalSum lm_eval_sum(const Model& model, ParameterStore& store, const std::vector<data::LmBatch>& batches,
                      DType compute_dtype, data::BatchUploader& uploader,
                      const std::function<void(int64_t tokens)>& on_batch = {}, const BuildContext& context = {});

}  // namespace moe
