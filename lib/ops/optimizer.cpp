// CPU reference of the fused optimizer updates (formulas in optimizer_math.h), sum of squares and
// finiteness check, the step ops over the scalars (on the CPU the same functions of optimizer_math.h the
// kernels run), and the public entry points with their argument checks.
// Covered by tests/ops/optimizer_test.cpp.
#include "ops/optimizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"

namespace moe {
namespace cpu {

namespace {
/// adam_element over n elements. The pointers do not alias and c is a copy, so the loop vectorises (run_wide:
/// 8 lanes on AVX2, the same operations without FMA, so the results equal the portable build's).
void adam_range(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, int64_t n,
                const AdamCoeffs c) {
  for (int64_t i = 0; i < n; ++i) adam_element(p[i], g[i], m[i], v[i], c);
}

/// Sum of squares in f64 over kLanes lanes (lane j takes the elements i = j mod kLanes), then the tail; vectorises.
double block_sum_squares(const float* __restrict p, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += double(p[i + j]) * double(p[i + j]);
  double s = 0;
  for (int j = 0; j < kLanes; ++j) s += lane[j];
  for (; i < n; ++i) s += double(p[i]) * double(p[i]);
  return s;
}
constexpr int64_t kSumBlock = 8192;  // fixed blocks: the sum does not depend on the thread count
}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c) {
  float *p = param.data<float>(), *pm = m.data<float>(), *pv = v.data<float>();
  const float* g = grad.data<float>();
  parallel_for(param.numel(), kElementsPerThread, [&](int64_t lo, int64_t hi) {  // one flat buffer, in parallel
    run_wide([&] { adam_range(p + lo, g + lo, pm + lo, pv + lo, hi - lo, c); });
  });
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c) {
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float dummy = 0.f;
  float* b = buf.defined() ? buf.data<float>() : nullptr;
  parallel_for(param.numel(), b ? kElementsPerThread : param.numel(), [&](int64_t lo, int64_t hi) {
    float scratch = dummy;
    for (int64_t i = lo; i < hi; ++i) sgd_element(p[i], g[i], b ? b[i] : scratch, c);
  });
}

void sum_squares(const Tensor& t, double& out) {
  const float* p = t.data<float>();
  const int64_t n = t.numel(), blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> part(static_cast<size_t>(blocks));
  parallel_for(blocks, kElementsPerThread / kSumBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t at = b * kSumBlock;
      run_wide([&] { part[size_t(b)] = block_sum_squares(p + at, std::min(kSumBlock, n - at)); });
    }
  });
  double s = 0;
  for (double x : part) s += x;
  out = s;
}

void all_finite(const Tensor& t, bool& out) {
  const float* p = t.data<float>();
  out = true;
  for (int64_t i = 0, n = t.numel(); i < n && out; ++i) out = std::isfinite(p[i]);
}

void set_step_inputs(const Tensor& scalars, double lr, double grad_scale) {
  double* s = scalars.data<double>();
  s[StepSlot::lr] = lr;
  s[StepSlot::grad_scale] = grad_scale;
}

void add_sum_squares(const Tensor& t, const Tensor& acc) {
  double sum = 0;
  sum_squares(t, sum);
  acc.data<double>()[0] += sum;
}

void prepare_step(const Tensor& scalars, const StepConfig& c) { moe::prepare_step(scalars.data<double>(), c); }

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which) {
  const double* s = scalars.data<double>();
  if (s[StepSlot::skip] == 0) adam_update(param, grad, m, v, adam_coeffs(base, s, which));
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which) {
  const double* s = scalars.data<double>();
  if (s[StepSlot::skip] == 0) sgd_update(param, grad, buf, sgd_coeffs(base, s, which));
}

}  // namespace cpu

namespace {
void check_scalars(const char* op, const Tensor& scalars) {
  MOE_CHECK(scalars.defined() && scalars.dtype() == DType::f64 && scalars.numel() == StepSlot::count, op,
            ": the step scalars must be an f64 vector of ", int(StepSlot::count), " elements");
}

void check_flat(const char* op, const char* what, const Tensor& t, const Tensor& param) {
  MOE_CHECK(t.defined(), op, ": ", what, " is undefined");
  check_same_device(op, param, t);
  check_dtype(op, what, t, DType::f32);
  check_shape(op, what, t, param.shape());
}
}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, float lr, float beta1,
                 float beta2, float eps, float weight_decay, bool decoupled, int64_t step, float grad_scale) {
  check_flat("adam_update", "param", param, param);
  check_flat("adam_update", "grad", grad, param);
  check_flat("adam_update", "m", m, param);
  check_flat("adam_update", "v", v, param);
  MOE_CHECK(step >= 1, "adam_update: step must be >= 1 (the count including this update), got ", step);
  MOE_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "adam_update: betas (", beta1, ", ", beta2,
            ") must be in [0, 1)");
  AdamCoeffs c{lr, beta1, beta2, eps, weight_decay, grad_scale, 0.f, 0.f, decoupled};
  c.inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(double(beta1), double(step))));
  c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(double(beta2), double(step))));
  if (param.numel() == 0) return;
  MOE_DISPATCH(param, adam_update, param, grad, m, v, c);
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, float lr, float momentum,
                float weight_decay, bool nesterov, float grad_scale, float lr_correct) {
  check_flat("sgd_update", "param", param, param);
  check_flat("sgd_update", "grad", grad, param);
  const bool needs_buf = nesterov || momentum != 0.f;
  if (needs_buf) check_flat("sgd_update", "momentum buffer", momentum_buf, param);
  const SgdCoeffs c{lr, momentum, weight_decay, grad_scale, lr_correct, nesterov};
  if (param.numel() == 0) return;
  MOE_DISPATCH(param, sgd_update, param, grad, needs_buf ? momentum_buf : Tensor(), c);
}

double sum_squares(const Tensor& t) {
  check_dtype("sum_squares", "input", t, DType::f32);
  double out = 0.0;
  if (t.numel() > 0) MOE_DISPATCH(t, sum_squares, t, out);
  return out;
}

bool all_finite(const Tensor& t) {
  check_dtype("all_finite", "input", t, DType::f32);
  bool out = true;
  if (t.numel() > 0) MOE_DISPATCH(t, all_finite, t, out);
  return out;
}

void set_step_inputs(const Tensor& scalars, double lr, double grad_scale) {
  check_scalars("set_step_inputs", scalars);
  MOE_DISPATCH(scalars, set_step_inputs, scalars, lr, grad_scale);
}

void add_sum_squares(const Tensor& t, const Tensor& acc) {
  check_dtype("add_sum_squares", "input", t, DType::f32);
  check_dtype("add_sum_squares", "accumulator", acc, DType::f64);
  MOE_CHECK(acc.numel() == 1, "add_sum_squares: the accumulator has ", acc.numel(), " elements, not 1");
  check_same_device("add_sum_squares", t, acc);
  if (t.numel() > 0) MOE_DISPATCH(t, add_sum_squares, t, acc);
}

void prepare_step(const Tensor& scalars, const StepConfig& c) {
  check_scalars("prepare_step", scalars);
  MOE_DISPATCH(scalars, prepare_step, scalars, c);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which) {
  check_flat("adam_update", "param", param, param);
  check_flat("adam_update", "grad", grad, param);
  check_flat("adam_update", "m", m, param);
  check_flat("adam_update", "v", v, param);
  check_scalars("adam_update", scalars);
  check_same_device("adam_update", param, scalars);
  MOE_CHECK(base.beta1 >= 0 && base.beta1 < 1 && base.beta2 >= 0 && base.beta2 < 1, "adam_update: betas (", base.beta1,
            ", ", base.beta2, ") must be in [0, 1)");
  if (param.numel() == 0) return;
  MOE_DISPATCH(param, adam_update, param, grad, m, v, base, scalars, which);
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which) {
  check_flat("sgd_update", "param", param, param);
  check_flat("sgd_update", "grad", grad, param);
  const bool needs_buf = base.nesterov || base.momentum != 0.f;
  if (needs_buf) check_flat("sgd_update", "momentum buffer", momentum_buf, param);
  check_scalars("sgd_update", scalars);
  check_same_device("sgd_update", param, scalars);
  if (param.numel() == 0) return;
  MOE_DISPATCH(param, sgd_update, param, grad, needs_buf ? momentum_buf : Tensor(), base, scalars, which);
}

}  // namespace moe
