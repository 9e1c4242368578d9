// CPU reference of batch normalisation over the rows of [..., C] inputs (math in batch_norm.h),
// in f32 and f64, plus argument checks and dispatch. Covered by tests/ops/batch_norm_test.cpp.
#include "ops/batch_norm.h"

#include <cmath>
#include <vector>

#include "ops/dispatch.h"
#include "ops/layer_norm.h"  // norm_stat_dtype, check_norm_param

namespace moe {

namespace cpu {
namespace {
std::vector<double> host(const Tensor& t, int64_t n, double fill) {
  return t.defined() ? t.to_vector<double>() : std::vector<double>(static_cast<size_t>(n), fill);
}
// t = v (set) or t += v (add), for an f32 or f64 tensor.
void store(Tensor& t, const std::vector<double>& v, bool add) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DType::f64)
      t.data<double>()[i] = (add ? t.data<double>()[i] : 0.0) + v[i];
    else
      t.data<float>()[i] = (add ? t.data<float>()[i] : 0.f) + static_cast<float>(v[i]);
  }
}

template <class T>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& rmean, Tensor& rvar, bool training,
             double momentum, double eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  const int64_t C = x.shape().last(), N = x.numel() / C;
  const std::vector<double> g = host(gamma, C, 1), b = host(beta, C, 0);
  const T* px = x.data<T>();
  std::vector<double> mu(static_cast<size_t>(C), 0.0), rs(static_cast<size_t>(C), 0.0);
  if (training) {
    std::vector<double> var(static_cast<size_t>(C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) mu[c] += px[n * C + c];
    for (double& m : mu) m /= double(N);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) var[c] += (px[n * C + c] - mu[c]) * (px[n * C + c] - mu[c]);
    for (int64_t c = 0; c < C; ++c) {
      var[c] /= double(N);
      rs[c] = 1 / std::sqrt(var[c] + eps);
    }
    if (rmean.defined()) {
      std::vector<double> rm = rmean.to_vector<double>(), rv = rvar.to_vector<double>();
      for (int64_t c = 0; c < C; ++c) {
        rm[c] = (1 - momentum) * rm[c] + momentum * mu[c];
        rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * double(N) / double(N - 1);
      }
      store(rmean, rm, false);
      store(rvar, rv, false);
    }
  } else {
    mu = rmean.to_vector<double>();
    const std::vector<double> rv = rvar.to_vector<double>();
    for (int64_t c = 0; c < C; ++c) rs[c] = 1 / std::sqrt(rv[c] + eps);
  }
  store(mean, mu, false);
  store(rstd, rs, false);
  T* py = y.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) py[n * C + c] = T((px[n * C + c] - mu[c]) * rs[c] * g[c] + b[c]);
}

template <class T>
void backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
              const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int64_t C = x.shape().last(), N = x.numel() / C;
  const std::vector<double> g = host(gamma, C, 1), mu = mean.to_vector<double>(), rs = rstd.to_vector<double>();
  const T *px = x.data<T>(), *pdy = dy.data<T>();
  std::vector<double> sdy(static_cast<size_t>(C), 0.0), sdyx(static_cast<size_t>(C), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      sdy[c] += pdy[n * C + c];
      sdyx[c] += pdy[n * C + c] * (px[n * C + c] - mu[c]) * rs[c];
    }
  if (dgamma.defined()) store(dgamma, sdyx, true);
  if (dbeta.defined()) store(dbeta, sdy, true);
  if (!dx.defined()) return;
  T* pdx = dx.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double xh = (px[n * C + c] - mu[c]) * rs[c];
      const double centre = training ? (sdy[c] + xh * sdyx[c]) / double(N) : 0.0;
      pdx[n * C + c] += T(rs[c] * g[c] * (pdy[n * C + c] - centre));
    }
}
}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd) {
  check_cpu_float("batch_norm", x);
  if (x.dtype() == DType::f64)
    forward<double>(x, gamma, beta, running_mean, running_var, training, momentum, eps, y, mean, rstd);
  else
    forward<float>(x, gamma, beta, running_mean, running_var, training, momentum, eps, y, mean, rstd);
}

void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  check_cpu_float("batch_norm backward", x);
  if (x.dtype() == DType::f64)
    backward<double>(x, gamma, mean, rstd, training, dy, dx, dgamma, dbeta);
  else
    backward<float>(x, gamma, mean, rstd, training, dy, dx, dgamma, dbeta);
}
}  // namespace cpu

namespace {
int64_t check_common(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() >= 1, op,
            ": the input needs a non-empty last (column) axis, not shape ", x.shape());
  const int64_t C = x.shape().last();
  check_norm_param(op, "gamma", gamma, x, C);
  const DType sd = norm_stat_dtype(x.dtype());
  for (const auto& [t, what] : {std::pair<const Tensor&, const char*>{mean, "mean"}, {rstd, "rstd"}}) {
    check_same_device(op, x, t);
    check_shape(op, what, t, Shape{C});
    check_dtype(op, what, t, sd);
  }
  return C;
}
}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd) {
  const char* op = "batch_norm";
  const int64_t C = check_common(op, x, gamma, mean, rstd);
  check_norm_param(op, "beta", beta, x, C);
  MOE_CHECK(!gamma.defined() || !beta.defined() || gamma.dtype() == beta.dtype(), op, ": gamma (",
            dtype_name(gamma.dtype()), ") and beta (", dtype_name(beta.dtype()), ") must have the same dtype");
  MOE_CHECK(running_mean.defined() == running_var.defined(), op, ": give both running_mean and running_var or neither");
  MOE_CHECK(training || running_mean.defined(), op, ": eval mode needs running_mean and running_var");
  for (const auto& [t, what] :
       {std::pair<const Tensor&, const char*>{running_mean, "running_mean"}, {running_var, "running_var"}}) {
    if (!t.defined()) continue;
    check_same_device(op, x, t);
    check_shape(op, what, t, Shape{C});
    // f32 running statistics also serve f64 inputs (they may live in the f32 parameter store).
    MOE_CHECK(t.dtype() == norm_stat_dtype(x.dtype()) || t.dtype() == DType::f32, op, ": ", what, " has dtype ",
              dtype_name(t.dtype()), " but f32 or ", dtype_name(norm_stat_dtype(x.dtype())), " is required");
  }
  const int64_t N = x.numel() / C;
  MOE_CHECK(!training || N > 1, op, ": training needs more than one row per column, input has shape ", x.shape());
  MOE_CHECK(momentum >= 0.f && momentum <= 1.f && eps >= 0.f, op, ": momentum must be in [0, 1] and eps >= 0, not ",
            momentum, " and ", eps);
  check_same_device(op, x, y);
  check_shape(op, "output", y, x.shape());
  check_dtype(op, "output", y, x.dtype());
  MOE_DISPATCH(x, batch_norm_forward, x, gamma, beta, running_mean, running_var, training, momentum, eps, y, mean,
               rstd);
}

void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const char* op = "batch_norm backward";
  const int64_t C = check_common(op, x, gamma, mean, rstd);
  check_same_device(op, x, dy, dx, dgamma, dbeta);
  check_shape(op, "output gradient", dy, x.shape());
  check_dtype(op, "output gradient", dy, x.dtype());
  if (dx.defined()) {
    check_shape(op, "input gradient", dx, x.shape());
    check_dtype(op, "input gradient", dx, x.dtype());
  }
  MOE_CHECK(!dgamma.defined() || gamma.defined(), op, ": dgamma requested without gamma");
  if (dgamma.defined()) {
    check_shape(op, "gamma gradient", dgamma, Shape{C});
    check_dtype(op, "gamma gradient", dgamma, gamma.dtype());
  }
  check_norm_param(op, "beta gradient", dbeta, x, C);
  MOE_CHECK(!dbeta.defined() || !gamma.defined() || gamma.dtype() == dbeta.dtype(), op,
            ": gamma and the beta gradient must have the same dtype");
  if (!dx.defined() && !dgamma.defined() && !dbeta.defined()) return;
  MOE_DISPATCH(x, batch_norm_backward, x, gamma, mean, rstd, training, dy, dx, dgamma, dbeta);
}

}  // namespace moe
