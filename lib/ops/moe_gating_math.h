// Math shared by the CPU and CUDA kernels of lib/ops/moe_gating.h: the load estimator's
// threshold choice and the standard normal cdf / pdf (T = float on the GPU, float or double on
// the CPU). Covered by tests/ops/moe_gating_test.cpp.
#pragma once
#include <cmath>

#include "tensor/philox.h"  // MOE_HD

namespace moe {

/// The k-th largest noisy value excluding i: top[k] (= t_{k+1}) when i is in the top k, else top[k-1].
template <class T>
MOE_HD T gate_threshold(T noisy, T t_in, T t_out, bool* in) {
  *in = noisy > t_in;
  return *in ? t_in : t_out;
}

template <class T>
MOE_HD T gate_normal_cdf(T z) {
  return T(0.5) * (T(1) + erf(z * T(0.70710678118654752440)));
}

template <class T>
MOE_HD T gate_normal_pdf(T z) {
  return T(0.39894228040143267794) * exp(T(-0.5) * z * z);
}

}  // namespace moe
