// Graph node of categorical_sample (lib/ops/categorical.h): i32 output, no gradient.
#include "graph/expr/categorical.h"

#include "ops/categorical.h"

namespace moe {

Expr categorical_sample(const Expr& probs, uint64_t seed, uint64_t stream) {
  MOE_CHECK(probs.shape().ndim() >= 1, "categorical_sample: weights need a category axis, not shape ", probs.shape());
  std::vector<int64_t> dims = probs.shape().vec();
  dims.back() = 1;
  Expr e = probs.graph().add("categorical_sample", Shape(dims), DType::i32, {probs},
                             [seed, stream](Node& n) { categorical_sample(n.in(0), n.alloc_val(), seed, stream); });
  e->requires_grad = false;
  e->backward = nullptr;
  return e;
}

}  // namespace moe
