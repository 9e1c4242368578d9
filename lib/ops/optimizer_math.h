// Per-element optimizer updates shared by the CPU reference (optimizer.cpp) and the CUDA kernels
// (cuda/ops/optimizer.cu), so both devices apply the same formulas in f32. g = grad * grad_scale.
//   Adam (L2, decoupled=false):  g += wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//                                p -= lr (m / bc1) / (sqrt(v / bc2) + eps),  bc_i = 1 - b_i^step
//   AdamW (decoupled=true):      the same without "g += wd p", and first p -= lr wd p.
//   SGD:  g += wd p; buf = mu buf + g (mu > 0); p -= lr (mu > 0 ? buf : g)
//   NAG (fairseq nag.py, buf holds -lr-scaled velocity, c = lr / lr_previous):
//         p *= 1 - lr wd;  p += mu^2 c buf - (1 + mu) lr g;  buf = mu c buf - lr g
// The step's scalars live on the parameters' device (StepSlot, an f64 vector) so that a step never waits
// for the host: prepare_step turns the sums of squares into the norm n = sqrt(clipped + partitioned) |s|
// (s = grad_scale), the skip flag (n or the unclipped ranges' norm not finite), the scale
// s min(1, clip / n), the step count and Adam's bias corrections; the update kernels read them.
// Covered by tests/ops/optimizer_test.cpp, tests/gpu/optimizer_parity_test.cpp, tests/gpu/update_graph_test.cpp.
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

/// The slots of an optimizer's scalars (an f64 vector of StepSlot::count on the parameters' device).
/// Inputs set by the host before each step: lr, grad_scale. Sums of squares, zeroed and added by each
/// step: clipped_sq, partitioned_sq (summed over the ranks), unclipped_sq. Outputs of prepare_step: norm,
/// skip, scale, inv_bc1, inv_sqrt_bc2, lr_correct. Kept across steps: step (the count of updates made),
/// lr_old (nag: the last update's lr, 0 before the first).
struct StepSlot {
  enum : int {
    lr,
    grad_scale,
    clipped_sq,
    partitioned_sq,
    unclipped_sq,
    norm,
    skip,
    scale,
    inv_bc1,
    inv_sqrt_bc2,
    lr_correct,
    step,
    lr_old,
    count
  };
};

/// What prepare_step needs besides the slots: the clipping threshold (0: none) and the optimizer's kind.
struct StepConfig {
  double clip_norm;
  float beta1, beta2;
  bool adam, nag;
};

/// x is neither NaN nor infinite (x - x is NaN for both), on the host and the device alike.
MOE_HD bool step_finite(double x) { return x - x == 0.0; }

/// Fills the output slots from the sums and the inputs; on a skipped step (a non-finite norm) only norm
/// and skip change, so the step count and nag's lr_old stay.
MOE_HD void prepare_step(double* s, const StepConfig& c) {
  const double gs = ::fabs(s[StepSlot::grad_scale]);
  const double norm = ::sqrt(s[StepSlot::clipped_sq] + s[StepSlot::partitioned_sq]) * gs;
  const double outside = ::sqrt(s[StepSlot::unclipped_sq]) * gs;
  const bool skip = !step_finite(norm) || !step_finite(outside);
  s[StepSlot::norm] = step_finite(norm) ? (step_finite(outside) ? norm : outside) : norm;
  s[StepSlot::skip] = skip ? 1.0 : 0.0;
  if (skip) return;
  double scale = s[StepSlot::grad_scale];
  if (c.clip_norm > 0 && norm > c.clip_norm) scale *= c.clip_norm / norm;
  s[StepSlot::scale] = scale;
  const double step = s[StepSlot::step] + 1;
  s[StepSlot::step] = step;
  s[StepSlot::inv_bc1] = c.adam ? 1.0 / (1.0 - ::pow(double(c.beta1), step)) : 1.0;
  s[StepSlot::inv_sqrt_bc2] = c.adam ? 1.0 / ::sqrt(1.0 - ::pow(double(c.beta2), step)) : 1.0;
  const double lr = s[StepSlot::lr], lr_old = s[StepSlot::lr_old];
  s[StepSlot::lr_correct] = c.nag && lr_old > 0 ? lr / lr_old : 1.0;
  s[StepSlot::lr_old] = lr;
}

/// Which scale an update range takes: the clipped one, or grad_scale alone (set_unclipped's ranges).
enum class StepScale { clipped, unclipped };

/// `base` (betas, eps, weight decay, decoupled) completed from the slots prepare_step filled.
MOE_HD AdamCoeffs adam_coeffs(AdamCoeffs c, const double* s, StepScale which) {
  c.lr = static_cast<float>(s[StepSlot::lr]);
  c.grad_scale = static_cast<float>(which == StepScale::clipped ? s[StepSlot::scale] : s[StepSlot::grad_scale]);
  c.inv_bc1 = static_cast<float>(s[StepSlot::inv_bc1]);
  c.inv_sqrt_bc2 = static_cast<float>(s[StepSlot::inv_sqrt_bc2]);
  return c;
}

/// `base` (momentum, weight decay, nesterov) completed from the slots prepare_step filled.
MOE_HD SgdCoeffs sgd_coeffs(SgdCoeffs c, const double* s, StepScale which) {
  c.lr = static_cast<float>(s[StepSlot::lr]);
  c.grad_scale = static_cast<float>(which == StepScale::clipped ? s[StepSlot::scale] : s[StepSlot::grad_scale]);
  c.lr_correct = static_cast<float>(s[StepSlot::lr_correct]);
  return c;
}

}  // namespace moe
