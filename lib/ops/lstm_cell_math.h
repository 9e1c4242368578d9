// The scalar math of the fused LSTM cell (lib/ops/lstm_cell.h), shared by the CPU reference and
// the CUDA kernels so both compute the same formulas. T is float or double.
#pragma once
#include <cmath>

#include "tensor/philox.h"  // MOE_HD

namespace moe {

template <class T>
MOE_HD T lstm_sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

/// c = sig(f) c_prev + sig(i) tanh(g).
template <class T>
MOE_HD T lstm_state(T gi, T gf, T gg, T c_prev) {
  return lstm_sigmoid(gf) * c_prev + lstm_sigmoid(gi) * tanh(gg);
}

/// Gradients of lstm_state given dc: writes d gi, d gf, d gg, d c_prev.
template <class T>
MOE_HD void lstm_state_grad(T gi, T gf, T gg, T c_prev, T dc, T* dgi, T* dgf, T* dgg, T* dcp) {
  const T si = lstm_sigmoid(gi), sf = lstm_sigmoid(gf), tg = tanh(gg);
  *dgi = dc * si * (T(1) - si) * tg;
  *dgf = dc * sf * (T(1) - sf) * c_prev;
  *dgg = dc * si * (T(1) - tg * tg);
  *dcp = dc * sf;
}

/// h = sig(o) tanh(c).
template <class T>
MOE_HD T lstm_output(T go, T c) {
  return lstm_sigmoid(go) * tanh(c);
}

/// Gradients of lstm_output given dh: writes d go and d c.
template <class T>
MOE_HD void lstm_output_grad(T go, T c, T dh, T* dgo, T* dc) {
  const T so = lstm_sigmoid(go), tc = tanh(c);
  *dgo = dh * so * (T(1) - so) * tc;
  *dc = dh * so * (T(1) - tc * tc);
}

}  // namespace moe
