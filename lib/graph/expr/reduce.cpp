// Graph nodes for reductions: forward writes the reduced value (a keepdim output is viewed without
// the axis), backward adds d(op)/dx * dy into the input's gradient. Whole-tensor reductions view
// the input as 1-D.
#include "graph/expr/reduce.h"

namespace moe {

Expr reduce(ReduceOp op, const Expr& x, int axis, bool keepdim) {
  const char* name = reduce_op_name(op);
  MOE_CHECK(x.shape().ndim() > 0 && axis >= -x.shape().ndim() && axis < x.shape().ndim(), name, ": axis ", axis,
            " out of range for shape ", x.shape());
  const int ax = x.shape().axis(axis);
  return x.graph().add(
      name, reduced_shape(x.shape(), ax, keepdim), x.dtype(), {x},
      [op, ax](Node& n) { reduce_forward(op, n.in(0), ax, n.alloc_val()); },
      [op, ax](Node& n) { reduce_backward(op, n.in(0), ax, n.val, n.grad, n.grad_of(0)); });
}

namespace {
Expr reduce_all(ReduceOp op, const Expr& x, const char* name) {
  const Shape flat{x.shape().numel()};
  MOE_CHECK(op == ReduceOp::sum || flat[0] > 0, name, ": the input of shape ", x.shape(), " is empty");
  return x.graph().add(
      name, Shape{}, x.dtype(), {x}, [op, flat](Node& n) { reduce_forward(op, n.in(0).view(flat), 0, n.alloc_val()); },
      [op, flat](Node& n) {
        Tensor dx = n.grad_of(0).view(flat);
        reduce_backward(op, n.in(0).view(flat), 0, n.val, n.grad, dx);
      });
}
}  // namespace

Expr sum_all(const Expr& x) { return reduce_all(ReduceOp::sum, x, "sum_all"); }
Expr mean_all(const Expr& x) { return reduce_all(ReduceOp::mean, x, "mean_all"); }

}  // namespace moe
