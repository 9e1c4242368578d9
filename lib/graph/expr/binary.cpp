// Graph nodes for the broadcasting binary ops: forward out = op(a, b), backward adds the
// broadcast-summed partial derivatives into the children that want gradients.
#include "graph/expr/binary.h"

#include "graph/expr/unary.h"

namespace moe {

Expr binary(BinaryOp op, const Expr& a, const Expr& b) {
  const char* name = binary_op_name(op);
  MOE_CHECK(a.dtype() == b.dtype(), name, ": operands have different dtypes (", dtype_name(a.dtype()), " ", a.shape(),
            " and ", dtype_name(b.dtype()), " ", b.shape(), "); cast one first");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  return a.graph().add(
      name, shape, a.dtype(), {a, b}, [op](Node& n) { binary_forward(op, n.in(0), n.in(1), n.alloc_val()); },
      [op](Node& n) {
        Tensor* da = n.wants_grad(0) ? &n.grad_of(0) : nullptr;
        Tensor* db = n.wants_grad(1) ? &n.grad_of(1) : nullptr;
        binary_backward(op, n.in(0), n.in(1), n.grad, da, db);
      });
}

Expr add_scalar(const Expr& x, float c) { return scale(x, 1.f, c); }
Expr mul_scalar(const Expr& x, float c) { return scale(x, c, 0.f); }

}  // namespace moe
