// Graph nodes for the fused LSTM cell: forward computes c (resp. h); backward adds into the gate
// gradient (its i/f/g resp. o slices) and the previous state's gradient.
#include "graph/expr/lstm_cell.h"

#include "graph/graph.h"
#include "ops/lstm_cell.h"

namespace moe {

Expr lstm_cell_state(const Expr& gates, const Expr& c_prev) {
  const Shape& g = gates.shape();
  MOE_CHECK(g.ndim() == 2 && g[1] % 4 == 0, "lstm_cell_state: gates must be [B, 4H], not ", g);
  const Shape state{g[0], g[1] / 4};
  std::vector<Expr> children{gates};
  if (c_prev.defined()) {
    MOE_CHECK(c_prev.shape() == state && c_prev.dtype() == gates.dtype(), "lstm_cell_state: c_prev ",
              dtype_name(c_prev.dtype()), " ", c_prev.shape(), " does not match gates ", dtype_name(gates.dtype()), " ",
              g);
    children.push_back(c_prev);
  }
  const bool has_prev = c_prev.defined();
  return gates.graph().add(
      "lstm_cell_state", state, gates.dtype(), children,
      [has_prev](Node& n) { lstm_cell_state_forward(n.in(0), has_prev ? n.in(1) : Tensor(), n.alloc_val()); },
      [has_prev](Node& n) {
        Tensor dgates = n.wants_grad(0) ? n.grad_of(0) : Tensor();
        Tensor dprev = has_prev && n.wants_grad(1) ? n.grad_of(1) : Tensor();
        lstm_cell_state_backward(n.in(0), has_prev ? n.in(1) : Tensor(), n.grad, dgates, dprev);
      });
}

Expr lstm_cell_output(const Expr& gates, const Expr& c) {
  const Shape& g = gates.shape();
  MOE_CHECK(g.ndim() == 2 && g[1] % 4 == 0, "lstm_cell_output: gates must be [B, 4H], not ", g);
  MOE_CHECK(c.shape() == Shape({g[0], g[1] / 4}) && c.dtype() == gates.dtype(), "lstm_cell_output: c ",
            dtype_name(c.dtype()), " ", c.shape(), " does not match gates ", dtype_name(gates.dtype()), " ", g);
  return gates.graph().add(
      "lstm_cell_output", c.shape(), gates.dtype(), {gates, c},
      [](Node& n) { lstm_cell_output_forward(n.in(0), n.in(1), n.alloc_val()); },
      [](Node& n) {
        Tensor dgates = n.wants_grad(0) ? n.grad_of(0) : Tensor();
        Tensor dc = n.wants_grad(1) ? n.grad_of(1) : Tensor();
        lstm_cell_output_backward(n.in(0), n.in(1), n.grad, dgates, dc);
      });
}

}  // namespace moe
