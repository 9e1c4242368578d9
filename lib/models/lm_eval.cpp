// lm_eval.h implementation. Covered by tests/training/lm_train_test.cpp.
#include "models/lm_eval.h"

#include "common/error.h"
#include "graph/graph.h"

namespace moe {

LmEvalSum lm_eval_sum(const Model& model, ParameterStore& store, const std::vector<data::LmBatch>& batches,
                      DType compute_dtype, data::BatchUploader& uploader,
                      const std::function<void(int64_t tokens)>& on_batch, const BuildContext& context) {
  MOE_CHECK(model.is_language_model(), "LM evaluation: model type '", model.type(), "' is not a language model");
  LmEvalSum s;
  for (const data::LmBatch& cpu_batch : batches) {
    const data::LmBatch batch = uploader.upload(cpu_batch);
    Graph g(store.device(), &store, GraphOptions{.training = false, .compute_dtype = compute_dtype});
    Builder b(g);
    b.context() = context;
    s.nll += model.lm_loss(b, batch, 0.f).val().item();
    s.tokens += batch.tokens;
    if (on_batch) on_batch(s.tokens);
  }
  return s;
}

}  // namespace moe
