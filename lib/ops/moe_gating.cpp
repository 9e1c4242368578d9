// CPU reference of the MoE routing kernels (see moe_gating.h for the math) and their checked,
// dispatched entry points. Covered by tests/ops/moe_gating_test.cpp.
#include "ops/moe_gating.h"

#include <algorithm>

#include "ops/dispatch.h"
#include "ops/moe_gating_math.h"

namespace moe {

namespace cpu {
namespace {
template <class T>
void noise_fwd(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream) {
  const T *c = clean.data<T>(), *s = sigma.data<T>();
  T* h = noisy.data<T>();
  for (int64_t i = 0, n = clean.numel(); i < n; ++i)
    h[i] = c[i] + static_cast<T>(gate_noise_value(seed, stream, static_cast<uint64_t>(i))) * s[i];
}
template <class T>
void noise_bwd(const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed, uint64_t stream) {
  const T* dh = dnoisy.data<T>();
  T* dc = dclean ? dclean->data<T>() : nullptr;
  T* ds = dsigma ? dsigma->data<T>() : nullptr;
  for (int64_t i = 0, n = dnoisy.numel(); i < n; ++i) {
    if (dc) dc[i] += dh[i];
    if (ds) ds[i] += dh[i] * static_cast<T>(gate_noise_value(seed, stream, static_cast<uint64_t>(i)));
  }
}
template <class T>
void prob_fwd(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top, Tensor& prob) {
  const int64_t rows = clean.shape()[0], n = clean.shape()[1], m = top.shape()[1], k = m - 1;
  const T *c = clean.data<T>(), *h = noisy.data<T>(), *s = sigma.data<T>(), *t = top.data<T>();
  T* p = prob.data<T>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      bool in;
      const int64_t e = r * n + i;
      const T tau = gate_threshold<T>(h[e], t[r * m + k], t[r * m + k - 1], &in);
      p[e] = gate_normal_cdf<T>((c[e] - tau) / s[e]);
    }
}
template <class T>
void prob_bwd(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top, const Tensor& dprob,
              Tensor* dclean, Tensor* dsigma, Tensor* dtop) {
  const int64_t rows = clean.shape()[0], n = clean.shape()[1], m = top.shape()[1], k = m - 1;
  const T *c = clean.data<T>(), *h = noisy.data<T>(), *s = sigma.data<T>(), *t = top.data<T>(), *dp = dprob.data<T>();
  T* dc = dclean ? dclean->data<T>() : nullptr;
  T* ds = dsigma ? dsigma->data<T>() : nullptr;
  T* dt = dtop ? dtop->data<T>() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    T sum_in = 0, sum_out = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool in;
      const int64_t e = r * n + i;
      const T tau = gate_threshold<T>(h[e], t[r * m + k], t[r * m + k - 1], &in);
      const T z = (c[e] - tau) / s[e];
      const T g = dp[e] * gate_normal_pdf<T>(z) / s[e];  // dP/d(clean)
      if (dc) dc[e] += g;
      if (ds) ds[e] -= g * z;
      (in ? sum_in : sum_out) -= g;
    }
    if (dt) {
      dt[r * m + k] += sum_in;
      dt[r * m + k - 1] += sum_out;
    }
  }
}
template <class T>
void mask_fwd(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask) {
  const int64_t cols = x.shape().last(), total = x.numel();
  const T *px = x.data<T>(), *th = thresholds.data<T>();
  const int32_t* ex = experts.defined() ? experts.data<int32_t>() : nullptr;
  T* pm = mask.data<T>();
  for (int64_t i = 0; i < total; ++i) pm[i] = px[i] > th[ex ? ex[i] : i % cols] ? T(1) : T(0);
}
}  // namespace

void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream) {
  check_cpu_float("gate_noise", clean);
  if (clean.dtype() == DType::f64) noise_fwd<double>(clean, sigma, noisy, seed, stream);
  else noise_fwd<float>(clean, sigma, noisy, seed, stream);
}
void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream) {
  check_cpu_float("gate_noise", sigma);
  if (sigma.dtype() == DType::f64) noise_bwd<double>(dnoisy, dclean, dsigma, seed, stream);
  else noise_bwd<float>(dnoisy, dclean, dsigma, seed, stream);
}
void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob) {
  check_cpu_float("prob_in_top_k", clean);
  if (clean.dtype() == DType::f64) prob_fwd<double>(clean, noisy, sigma, top, prob);
  else prob_fwd<float>(clean, noisy, sigma, top, prob);
}
void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop) {
  check_cpu_float("prob_in_top_k", clean);
  if (clean.dtype() == DType::f64) prob_bwd<double>(clean, noisy, sigma, top, dprob, dclean, dsigma, dtop);
  else prob_bwd<float>(clean, noisy, sigma, top, dprob, dclean, dsigma, dtop);
}
void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out) {
  const int32_t* po = outer.defined() ? outer.data<int32_t>() : nullptr;
  const int32_t* pi = inner.defined() ? inner.data<int32_t>() : nullptr;
  int32_t* py = out.data<int32_t>();
  const int64_t cols = pi ? inner.shape().last() : 1, rows = out.numel() / std::max<int64_t>(cols, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      py[r * cols + j] =
          static_cast<int32_t>(((po ? po[r] : r) / divisor) * inner_size + (pi ? pi[r * cols + j] : 0));
}
void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask) {
  check_cpu_float("threshold_mask", x);
  if (experts.defined()) {  // out-of-range expert ids are errors on the CPU
    const int64_t n = thresholds.numel();
    for (int32_t e : experts.to_vector<int32_t>())
      MOE_CHECK(e >= 0 && e < n, "threshold_mask: expert id ", e, " out of range [0, ", n, ")");
  }
  if (x.dtype() == DType::f64) mask_fwd<double>(x, experts, thresholds, mask);
  else mask_fwd<float>(x, experts, thresholds, mask);
}
}  // namespace cpu

namespace {
void check_float_same(const char* op, const char* what, const Tensor& t, const Tensor& ref) {
  check_shape(op, what, t, ref.shape());
  check_dtype(op, what, t, ref.dtype());
}
void check_prob_args(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top) {
  const char* op = "prob_in_top_k";
  MOE_CHECK(clean.shape().ndim() == 2, op, ": clean logits must be [rows, experts], not ", clean.shape());
  MOE_CHECK(is_floating(clean.dtype()), op, ": logits must be floating, not ", dtype_name(clean.dtype()));
  check_float_same(op, "noisy logits", noisy, clean);
  check_float_same(op, "noise stddev", sigma, clean);
  const int64_t n = clean.shape()[1];
  MOE_CHECK(top.shape().ndim() == 2 && top.shape()[0] == clean.shape()[0] && top.shape()[1] >= 2 && top.shape()[1] <= n,
            op, ": top values ", top.shape(), " must be [rows, k+1] with 1 <= k < n for logits ", clean.shape());
  check_dtype(op, "top values", top, clean.dtype());
  check_same_device(op, clean, noisy, sigma, top);
}
}  // namespace

void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream) {
  MOE_CHECK(is_floating(clean.dtype()), "gate_noise: logits must be floating, not ", dtype_name(clean.dtype()));
  check_float_same("gate_noise", "noise stddev", sigma, clean);
  check_float_same("gate_noise", "output", noisy, clean);
  check_same_device("gate_noise", clean, sigma, noisy);
  MOE_DISPATCH(clean, gate_noise_forward, clean, sigma, noisy, seed, stream);
}

void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream) {
  check_float_same("gate_noise", "output gradient", dnoisy, sigma);
  if (dclean) check_float_same("gate_noise", "logit gradient", *dclean, sigma);
  if (dsigma) check_float_same("gate_noise", "stddev gradient", *dsigma, sigma);
  check_same_device("gate_noise", sigma, dnoisy, dclean ? *dclean : Tensor(), dsigma ? *dsigma : Tensor());
  MOE_DISPATCH(sigma, gate_noise_backward, sigma, dnoisy, dclean, dsigma, seed, stream);
}

void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob) {
  check_prob_args(clean, noisy, sigma, top);
  check_float_same("prob_in_top_k", "output", prob, clean);
  check_same_device("prob_in_top_k", clean, prob);
  MOE_DISPATCH(clean, prob_in_top_k_forward, clean, noisy, sigma, top, prob);
}

void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop) {
  check_prob_args(clean, noisy, sigma, top);
  check_float_same("prob_in_top_k", "output gradient", dprob, clean);
  if (dclean) check_float_same("prob_in_top_k", "logit gradient", *dclean, clean);
  if (dsigma) check_float_same("prob_in_top_k", "stddev gradient", *dsigma, clean);
  if (dtop) check_float_same("prob_in_top_k", "top-value gradient", *dtop, top);
  check_same_device("prob_in_top_k", clean, dprob, dclean ? *dclean : Tensor(), dsigma ? *dsigma : Tensor(),
                    dtop ? *dtop : Tensor());
  MOE_DISPATCH(clean, prob_in_top_k_backward, clean, noisy, sigma, top, dprob, dclean, dsigma, dtop);
}

void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out) {
  const char* op = "route_index";
  if (outer.defined()) check_dtype(op, "outer index", outer, DType::i32);
  MOE_CHECK(divisor >= 1 && inner_size >= 1, op, ": divisor ", divisor, " and inner size ", inner_size,
            " must be >= 1");
  if (inner.defined()) {
    check_dtype(op, "inner index", inner, DType::i32);
    MOE_CHECK(inner.shape().ndim() == 2 && (!outer.defined() || (inner.shape()[0] == outer.numel() &&
                                                                  outer.shape().ndim() == 1)),
              op, ": inner index ", inner.shape(), " must be [rows, c] for outer index ",
              outer.defined() ? outer.shape() : Shape{});
    check_shape(op, "output", out, inner.shape());
  } else if (outer.defined()) {
    check_shape(op, "output", out, outer.shape());
  } else {
    MOE_CHECK(out.shape().ndim() == 1, op, ": without an outer index the output must be 1-D, not ", out.shape());
  }
  check_dtype(op, "output", out, DType::i32);
  check_same_device(op, out, outer, inner);
  MOE_DISPATCH(out, route_index, outer, inner, divisor, inner_size, out);
}

void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask) {
  const char* op = "threshold_mask";
  MOE_CHECK(x.shape().ndim() >= 1 && is_floating(x.dtype()), op, ": x must be a floating [rows, c] tensor, not ",
            x.shape(), " ", dtype_name(x.dtype()));
  MOE_CHECK(thresholds.shape().ndim() == 1, op, ": thresholds must be [experts], not ", thresholds.shape());
  check_dtype(op, "thresholds", thresholds, x.dtype());
  if (experts.defined()) {
    check_dtype(op, "expert ids", experts, DType::i32);
    check_shape(op, "expert ids", experts, x.shape());
  } else {
    MOE_CHECK(x.shape().last() == thresholds.numel(), op, ": x ", x.shape(), " needs one threshold per column, got ",
              thresholds.shape());
  }
  check_float_same(op, "mask", mask, x);
  check_same_device(op, x, experts, thresholds, mask);
  MOE_DISPATCH(x, threshold_mask, x, experts, thresholds, mask);
}

}  // namespace moe
