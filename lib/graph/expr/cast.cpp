// Graph node for dtype casts: forward out = cast(x), backward dx += cast(dy) (floating types only).
#include "graph/expr/cast.h"

namespace moe {

Expr cast(const Expr& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  const bool differentiable = is_floating(x.dtype()) && is_floating(dtype);
  NodeFn backward;
  if (differentiable) backward = [](Node& n) { cast_backward(n.grad, n.grad_of(0)); };
  return x.graph().add(
      std::string("cast_") + dtype_name(dtype), x.shape(), dtype, {x},
      [](Node& n) { cast_forward(n.in(0), n.alloc_val()); }, backward);
}

}  // namespace moe
