// LSTM layers from graph ops (Hochreiter & Schmidhuber; the peephole-free form with an optional
// output projection, Sak et al. 2014 "LSTMP"), as the 1B-word language models use them:
//   [i f o g] = x_t W_x + b + h_{t-1} W_h      (x_t W_x + b for all steps in one matmul)
//   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g);   h_t = (sigmoid(o) * tanh(c_t)) W_p
// The gate order is i, f, o, g so one sigmoid covers the first three slices.
// Covered by tests/models/lstm_test.cpp (finite differences of the cell and the layer).
#pragma once
#include "layers/builder.h"

namespace moe {

struct LstmSpec {
  int64_t input = 0, hidden = 0;
  int64_t projection = 0;  // 0 = none (h_t has `hidden` features)
  int64_t out() const { return projection > 0 ? projection : hidden; }
};

/// Recurrent state: h [B, out] and c [B, hidden]; undefined Exprs mean zeros (the first step).
struct LstmState {
  Expr h, c;
};

/// One step given the input part of the gates, gates_x [B, 4 hidden] (x_t W_x + b), the recurrent
/// weight w_h [out, 4 hidden] and the projection w_p [hidden, projection] (undefined: none).
LstmState lstm_cell(const Expr& gates_x, const LstmState& prev, const Expr& w_h, const Expr& w_p);

/// The whole sequence from explicit weights: x [B, T, in] -> h [B, T, out]; w_x [in, 4 hidden],
/// bias [4 hidden]. `state` (optional) gives the initial state and receives the final one.
Expr lstm_sequence(const Expr& x, const Expr& w_x, const Expr& bias, const Expr& w_h, const Expr& w_p,
                   LstmState* state = nullptr);

/// A layer's parameters: "wx" [in, 4H], "b" [4H] (forget-gate slice 1, others 0), "wh" [out, 4H] and
/// "wp" [H, P] (with a projection), Glorot-uniform weights, in the compute dtype.
struct LstmWeights {
  Expr w_x, bias, w_h, w_p;
};
LstmWeights lstm_weights(const Builder& b, const LstmSpec& spec);

/// The layer with the parameters of lstm_weights.
Expr lstm_layer(const Builder& b, const Expr& x, const LstmSpec& spec, LstmState* state = nullptr);

}  // namespace moe
