// Per-element optimizer updates shared by the CPU reference (optimizer.cpp) and the CUDA kernels
// (cuda/ops/optimizer.cu), so both devices apply the same formulas in f32. g = grad * grad_scale.
//   Adam (L2, decoupled=false):  g += wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//                                p -= lr (m / bc1) / (sqrt(v / bc2) + eps),  bc_i = 1 - b_i^step
//   AdamW (decoupled=true):      the same without "g += wd p", and first p -= lr wd p.
//   SGD:  g += wd p; buf = mu buf + g (mu > 0); p -= lr (mu > 0 ? buf : g)
//   NAG (fairseq nag.py, buf holds -lr-scaled velocity, c = lr / lr_previous):
//         p *= 1 - lr wd;  p += mu^2 c buf - (1 + mu) lr g;  buf = mu c buf - lr g
// Covered by tests/ops/optimizer_test.cpp.
#pragma once
#include <cmath>

#include "tensor/philox.h"  // MOE_HD

namespace moe {

struct AdamCoeffs {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float inv_bc1;       // 1 / (1 - beta1^step)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^step)
  bool decoupled;
};

struct SgdCoeffs {
  float lr, momentum, weight_decay, grad_scale, lr_correct;
  bool nesterov;
};

MOE_HD void adam_element(float& p, float g, float& m, float& v, const AdamCoeffs& c) {
  g *= c.grad_scale;
  if (c.decoupled)
    p -= c.lr * c.weight_decay * p;
  else
    g += c.weight_decay * p;
  m = c.beta1 * m + (1.f - c.beta1) * g;
  v = c.beta2 * v + (1.f - c.beta2) * g * g;
  p -= c.lr * (m * c.inv_bc1) / (sqrtf(v) * c.inv_sqrt_bc2 + c.eps);
}

/// `buf` is ignored (and may point to a dummy) when momentum == 0 and not nesterov.
MOE_HD void sgd_element(float& p, float g, float& buf, const SgdCoeffs& c) {
  g *= c.grad_scale;
  if (c.nesterov) {
    p *= 1.f - c.lr * c.weight_decay;
    p += c.momentum * c.momentum * c.lr_correct * buf - (1.f + c.momentum) * c.lr * g;
    buf = c.momentum * c.lr_correct * buf - c.lr * g;
    return;
  }
  g += c.weight_decay * p;
  if (c.momentum != 0.f) {
    buf = c.momentum * buf + g;
    g = buf;
  }
  p -= c.lr * g;
}

}  // namespace moe
