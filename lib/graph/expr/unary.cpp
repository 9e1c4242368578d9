// Graph nodes for element-wise unary functions: forward y = f(x), backward dx += dy * f'(x).
#include "graph/expr/unary.h"

namespace moe {

Expr unary(UnaryOp op, const Expr& x, float alpha, float beta) {
  return x.graph().add(
      unary_op_name(op), x.shape(), x.dtype(), {x},
      [op, alpha, beta](Node& n) { unary_forward(op, n.in(0), n.alloc_val(), alpha, beta); },
      [op, alpha](Node& n) { unary_backward(op, n.in(0), n.val, n.grad, n.grad_of(0), alpha); });
}

}  // namespace moe
