// Graph nodes for (log-)softmax: forward y = (log-)softmax(x, mask), backward through y only
// (see lib/ops/softmax.h for the formulas). Covered by tests/ops/softmax_test.cpp.
#include "graph/expr/softmax.h"

namespace moe {
namespace {
Expr softmax_node(const Expr& x, const Tensor& mask, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  Graph& g = x.graph();
  Tensor m = mask.defined() && mask.device() != g.device() ? mask.to(g.device()) : mask;
  MOE_CHECK(x.shape().ndim() >= 1, op, ": the input must have at least one axis, not shape ", x.shape());
  if (m.defined()) {
    // Checked here too, so a bad mask fails when the graph is built rather than when it runs.
    MOE_CHECK(m.dtype() == DType::u8, op, ": the mask must be u8 (1 keeps, 0 masks), not ", dtype_name(m.dtype()));
    const int64_t cols = x.shape().last();
    MOE_CHECK(m.shape() == x.shape() || (m.shape().ndim() >= 1 && m.shape().last() == cols && m.numel() == cols), op,
              ": mask of shape ", m.shape(), " does not fit input ", x.shape(),
              " (it must have the same shape or be one row [1.., ", cols, "])");
  }
  return g.add(
      op, x.shape(), x.dtype(), {x}, [m, log](Node& n) { softmax_forward(n.in(0), m, n.alloc_val(), log); },
      [log](Node& n) { softmax_backward(n.val, n.grad, n.grad_of(0), log); });
}
}  // namespace

Expr softmax(const Expr& x, const Tensor& mask) { return softmax_node(x, mask, false); }
Expr log_softmax(const Expr& x, const Tensor& mask) { return softmax_node(x, mask, true); }

}  // namespace moe
