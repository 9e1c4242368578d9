// Graph node for cross_entropy: the forward computes the per-row loss and keeps the per-row
// logsumexp (shared with the backward closure), the backward adds dloss*(softmax - q) into the
// logits' gradient. Covered by tests/ops/cross_entropy_test.cpp.
#include "graph/expr/cross_entropy.h"

#include <memory>

namespace moe {

Expr cross_entropy(const Expr& logits, const Expr& targets, float label_smoothing, int ignore_index) {
  MOE_CHECK(targets.dtype() == DType::i32, "cross_entropy: targets must be i32, not ", dtype_name(targets.dtype()));
  MOE_CHECK(!targets->requires_grad, "cross_entropy: the targets cannot take a gradient");
  std::vector<int64_t> rows = logits.shape().vec();
  MOE_CHECK(!rows.empty(), "cross_entropy: logits need a vocabulary axis, not shape ", logits.shape());
  rows.pop_back();
  MOE_CHECK(targets.shape() == Shape(rows), "cross_entropy: targets of shape ", targets.shape(),
            " do not match logits of shape ", logits.shape());
  const DType ld = cross_entropy_loss_dtype(logits.dtype());
  auto lse = std::make_shared<Tensor>();
  return logits.graph().add(
      "cross_entropy", targets.shape(), ld, {logits, targets},
      [lse, label_smoothing, ignore_index, ld](Node& n) {
        *lse = Tensor::empty(n.shape, ld, n.graph->device());
        cross_entropy_forward(n.in(0), n.in(1), n.alloc_val(), *lse, label_smoothing, ignore_index);
      },
      [lse, label_smoothing, ignore_index](Node& n) {
        if (n.wants_grad(0))
          cross_entropy_backward(n.in(0), n.in(1), *lse, n.grad, n.grad_of(0), label_smoothing, ignore_index);
      });
}

}  // namespace moe
