// validation.h implementation. Covered by tests/training/resume_test.cpp.
#include "training/validation.h"

#include <chrono>
#include <cmath>

#include "common/error.h"
#include "data/batch_generator.h"
#include "graph/graph.h"

namespace moe {

Validator::Validator(const data::EncodedCorpus& src, const data::EncodedCorpus& tgt, const ValidBatchOptions& o) {
  data::BatchOptions bo;
  bo.max_tokens = o.max_tokens;
  bo.shuffle = false;
  bo.filter.max_src_len = bo.filter.max_tgt_len = o.max_len;
  bo.pad_id = o.pad_id;
  bo.bos_id = o.bos_id;
  bo.eos_id = o.eos_id;
  data::BatchGenerator gen(src, tgt, bo);
  dropped_ = src.size() - gen.kept();
  MOE_CHECK(gen.kept() > 0, "validation: none of the ", src.size(), " valid pairs is usable (",
            gen.filter_stats().summary(), ")");
  while (auto b = gen.next()) {
    sentences_ += b->size();
    tokens_ += b->tgt_tokens;
    batches_.push_back(std::move(*b));
  }
}

ValidFigures Validator::run(const Model& model, ParameterStore& store, DType compute_dtype,
                            data::BatchUploader& uploader, const BuildContext& context) const {
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0;
  for (const data::Batch& cpu_batch : batches_) {
    const data::Batch batch = uploader.upload(cpu_batch);
    Graph g(store.device(), &store, GraphOptions{.training = false, .compute_dtype = compute_dtype});
    Builder b(g);
    b.context() = context;
    const Expr loss = model.loss(b, batch, 0.f);
    loss_sum += loss.val().item();
  }
  ValidFigures f;
  f.loss = loss_sum / static_cast<double>(tokens_);
  f.tokens = tokens_;
  f.sentences = sentences_;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace moe
