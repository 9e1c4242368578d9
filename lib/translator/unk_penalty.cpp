// unk_penalty.h implementation. Covered by tests/translator/unk_penalty_test.cpp.
#include "translator/unk_penalty.h"

#include "common/error.h"
#include "ops/gather_scatter.h"

namespace moe {

void check_unk_penalty(const BeamOptions& o, int64_t vocab) {
  if (o.unkpen == 0) return;
  MOE_CHECK(o.unk_id >= 0, "unkpen ", o.unkpen, ": the target vocabulary's <unk> id was not given to the search");
  MOE_CHECK(o.unk_id < vocab, "unkpen: the vocabulary's <unk> id ", o.unk_id, " is outside the model's ", vocab,
            " output tokens");
}

void penalize_unk(Tensor& logp, const std::vector<uint8_t>& free_rows, const BeamOptions& o) {
  if (o.unkpen == 0) return;
  const int64_t n = static_cast<int64_t>(free_rows.size());
  MOE_CHECK(logp.shape().ndim() == 2 && logp.shape()[0] == n, "unkpen: log-probabilities ", logp.shape(), " for ", n,
            " rows");
  check_unk_penalty(o, logp.shape()[1]);
  std::vector<float> add(free_rows.size());
  for (size_t r = 0; r < free_rows.size(); ++r) add[r] = free_rows[r] ? -static_cast<float>(o.unkpen) : 0.f;
  const Shape shape{n, 1};
  scatter_add_last_forward(logp,
                           Tensor::from_vector(std::vector<int32_t>(free_rows.size(), o.unk_id), shape, logp.device()),
                           Tensor::from_vector(add, shape, logp.device(), logp.dtype()));
}

}  // namespace moe
