// The scalar math of the fused LSTM cell (lib/ops/lstm_cell.h), shared by the CPU reference and
// the CUDA kernels so both compute the same formulas. T is float or double. A is the activations'
// implementation: LstmActivations (the library's exp and tanh; the CUDA kernels and the CPU's f64),
// or the CPU's vectorisable f32 ones (lstm_cell.cpp, over cpu_math.h's exp_fast).
#pragma once
#include <cmath>

#include "tensor/philox.h"  // MOE_HD

namespace moe {

/// sig(x) = 1 / (1 + e^-x) and tanh(x) by the math library.
struct LstmActivations {
  template <class T>
  MOE_HD static T sigmoid(T x) {
    return T(1) / (T(1) + exp(-x));
  }
  template <class T>
  MOE_HD static T tanh_of(T x) {
    return tanh(x);
  }
};

/// c = sig(f) c_prev + sig(i) tanh(g).
template <class T, class A = LstmActivations>
MOE_HD T lstm_state(T gi, T gf, T gg, T c_prev) {
  return A::sigmoid(gf) * c_prev + A::sigmoid(gi) * A::tanh_of(gg);
}

/// Gradients of lstm_state given dc: writes d gi, d gf, d gg, d c_prev.
template <class T, class A = LstmActivations>
MOE_HD void lstm_state_grad(T gi, T gf, T gg, T c_prev, T dc, T* dgi, T* dgf, T* dgg, T* dcp) {
  const T si = A::sigmoid(gi), sf = A::sigmoid(gf), tg = A::tanh_of(gg);
  *dgi = dc * si * (T(1) - si) * tg;
  *dgf = dc * sf * (T(1) - sf) * c_prev;
  *dgg = dc * si * (T(1) - tg * tg);
  *dcp = dc * sf;
}

/// h = sig(o) tanh(c).
template <class T, class A = LstmActivations>
MOE_HD T lstm_output(T go, T c) {
  return A::sigmoid(go) * A::tanh_of(c);
}

/// Gradients of lstm_output given dh: writes d go and d c.
template <class T, class A = LstmActivations>
MOE_HD void lstm_output_grad(T go, T c, T dh, T* dgo, T* dc) {
  const T so = A::sigmoid(go), tc = A::tanh_of(c);
  *dgo = dh * so * (T(1) - so) * tc;
  *dc = dh * so * (T(1) - tc * tc);
}

}  // namespace moe
