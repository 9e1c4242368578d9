// Expression operators for the fused LSTM cell (graph nodes over lib/ops/lstm_cell.h), gates
// [B, 4H] in the order i, f, o, g:
//   lstm_cell_state(gates, c_prev) = sigmoid(f) * c_prev + sigmoid(i) * tanh(g)   (c_prev optional)
//   lstm_cell_output(gates, c)     = sigmoid(o) * tanh(c)
// Gradients flow to the gates and the states. Covered by tests/ops/lstm_cell_test.cpp.
#pragma once
#include "graph/node.h"

namespace moe {

Expr lstm_cell_state(const Expr& gates, const Expr& c_prev);
Expr lstm_cell_output(const Expr& gates, const Expr& c);

}  // namespace moe
