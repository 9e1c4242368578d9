// target_loss.h implementation. Covered by tests/training/weighted_loss_test.cpp.
#include "models/target_loss.h"

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"

namespace moe {

Expr summed_target_loss(const Builder& b, const Expr& ce, const Tensor& weights, const Tensor& rows) {
  if (!weights.defined()) return sum_all(ce);
  Expr w = b.graph().input(weights.view(Shape{weights.numel(), 1}));
  if (rows.defined()) w = index_select(w, b.graph().input(rows));
  w = reshape(w, {ce.shape().numel()});
  if (w.dtype() != ce.dtype()) w = cast(w, ce.dtype());
  return sum_all(mul(ce, w));
}

}  // namespace moe
