// lstm.h implementation: one matmul for the input projection of all steps, then per step a
// recurrent matmul and the fused cell ops (lib/graph/expr/lstm_cell.h: two point-wise kernels).
// The sequence runs time-major ([T, B, *]) so each step's slice is contiguous.
#include "layers/lstm.h"

#include <vector>

#include "graph/expr/binary.h"
#include "graph/expr/lstm_cell.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"

namespace moe {

LstmState lstm_cell(const Expr& gates_x, const LstmState& prev, const Expr& w_h, const Expr& w_p) {
  MOE_CHECK(gates_x.shape().ndim() == 2 && gates_x.shape()[1] % 4 == 0, "lstm_cell: gates_x must be [B, 4H], not ",
            gates_x.shape());
  const int64_t hidden = gates_x.shape()[1] / 4;
  MOE_CHECK(w_h.shape().ndim() == 2 && w_h.shape()[1] == 4 * hidden, "lstm_cell: w_h ", w_h.shape(),
            " does not match gates ", gates_x.shape());
  Expr gates = gates_x;
  if (prev.h.defined()) {
    MOE_CHECK(prev.h.shape() == Shape({gates_x.shape()[0], w_h.shape()[0]}), "lstm_cell: state h ", prev.h.shape(),
              " does not match gates ", gates_x.shape(), " and w_h ", w_h.shape());
    gates = add(gates, matmul(prev.h, w_h));
  }
  if (prev.c.defined())
    MOE_CHECK(prev.c.shape() == Shape({gates.shape()[0], hidden}), "lstm_cell: state c ", prev.c.shape(),
              " does not match gates ", gates.shape());
  Expr c = lstm_cell_state(gates, prev.c);  // fused: sigmoid(f) c_prev + sigmoid(i) tanh(g)
  Expr h = lstm_cell_output(gates, c);      // fused: sigmoid(o) tanh(c)
  if (w_p.defined()) {
    MOE_CHECK(w_p.shape().ndim() == 2 && w_p.shape()[0] == hidden, "lstm_cell: projection ", w_p.shape(),
              " does not take ", hidden, " features");
    h = matmul(h, w_p);
  }
  return LstmState{h, c};
}

Expr lstm_sequence(const Expr& x, const Expr& w_x, const Expr& bias, const Expr& w_h, const Expr& w_p,
                   LstmState* state) {
  const Shape& s = x.shape();
  MOE_CHECK(s.ndim() == 3, "lstm: input must be [B, T, features], not ", s);
  MOE_CHECK(w_x.shape().ndim() == 2 && w_x.shape()[0] == s[2], "lstm: input has ", s[2], " features, w_x is ",
            w_x.shape());
  const int64_t B = s[0], T = s[1];
  MOE_CHECK(T > 0, "lstm: empty sequence (input ", s, ")");
  // Input projections of all steps at once, time-major: [T, B, 4H].
  Expr gx = linear(transpose(x, {1, 0, 2}), w_x, bias);
  const int64_t four_h = gx.shape()[2];
  LstmState st = state ? *state : LstmState{};
  std::vector<Expr> outs;
  outs.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Expr gt = T == 1 ? reshape(gx, Shape{B, four_h}) : reshape(slice(gx, 0, t, 1), Shape{B, four_h});
    st = lstm_cell(gt, st, w_h, w_p);
    outs.push_back(reshape(st.h, Shape{1, B, st.h.shape()[1]}));
  }
  if (state) *state = st;
  Expr seq = T == 1 ? outs[0] : concat(outs, 0);  // [T, B, out]
  return transpose(seq, {1, 0, 2});
}

LstmWeights lstm_weights(const Builder& b, const LstmSpec& spec) {
  MOE_CHECK(spec.input > 0 && spec.hidden > 0 && spec.projection >= 0, b.name("wx"), ": bad LSTM sizes input ",
            spec.input, ", hidden ", spec.hidden, ", projection ", spec.projection);
  const int64_t H = spec.hidden;
  std::vector<float> bias(static_cast<size_t>(4 * H), 0.f);
  for (int64_t j = H; j < 2 * H; ++j) bias[static_cast<size_t>(j)] = 1.f;  // forget gate starts open
  LstmWeights w;
  w.w_x = b.weight("wx", Shape{spec.input, 4 * H}, Init::glorot_uniform());
  w.bias = b.weight("b", Shape{4 * H}, Init::from_values(bias));
  w.w_h = b.weight("wh", Shape{spec.out(), 4 * H}, Init::glorot_uniform());
  if (spec.projection > 0) w.w_p = b.weight("wp", Shape{H, spec.projection}, Init::glorot_uniform());
  return w;
}

Expr lstm_layer(const Builder& b, const Expr& x, const LstmSpec& spec, LstmState* state) {
  MOE_CHECK(x.shape().ndim() == 3 && x.shape()[2] == spec.input, b.name("wx"), ": input ", x.shape(), " does not have ",
            spec.input, " features");
  const LstmWeights w = lstm_weights(b, spec);
  return lstm_sequence(x, w.w_x, w.bias, w.w_h, w.w_p, state);
}

}  // namespace moe
