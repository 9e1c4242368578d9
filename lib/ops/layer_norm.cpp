// CPU reference of layer normalisation (math in layer_norm.h) in f32 and f64, with gamma/beta of
// any float dtype, plus the argument checks and dispatch. Forward: the row's mean and variance in
// one pass (Welford in lanes, row_moments), then the output pass; backward: one pass for the
// normalised row, the dgamma / dbeta sums and the row sums (lanes), one for dx. Covered by
// tests/ops/layer_norm_test.cpp.
#include "ops/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"

namespace moe {

DType norm_stat_dtype(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

void check_norm_param(const char* op, const char* what, const Tensor& p, const Tensor& x, int64_t d) {
  if (!p.defined()) return;
  check_same_device(op, x, p);
  check_shape(op, what, p, Shape{d});
  MOE_CHECK(p.dtype() == x.dtype() || p.dtype() == DType::f32, op, ": ", what, " has dtype ", dtype_name(p.dtype()),
            " but must be f32 or the input's ", dtype_name(x.dtype()));
}

namespace cpu {
namespace {
std::vector<double> host(const Tensor& t, int64_t d, double fill) {
  return t.defined() ? t.to_vector<double>() : std::vector<double>(static_cast<size_t>(d), fill);
}
void add_into(Tensor& t, const std::vector<double>& v) {
  if (t.dtype() == DType::f64) {
    for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] += v[i];
  } else {
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] += static_cast<float>(v[i]);
  }
}

/// Mean and the sum of squared deviations of a row in one pass: Welford's update in kLanes
/// interleaved lanes (vectorised; every lane has seen the same count), merged with Chan et al.'s
/// pairwise formula, then the tail element by element.
template <class T>
std::pair<T, T> row_moments(const T* x, int64_t d) {
  const int64_t steps = d / kLanes;
  T mean[kLanes] = {}, m2[kLanes] = {};
  for (int64_t s = 0; s < steps; ++s) {
    const T inv = T(1) / T(s + 1);
    const T* xs = x + s * kLanes;
    for (int l = 0; l < kLanes; ++l) {
      const T delta = xs[l] - mean[l];
      mean[l] += delta * inv;
      m2[l] += delta * (xs[l] - mean[l]);
    }
  }
  T n = 0, mu = 0, sq = 0;
  auto merge = [&](T nb, T mb, T m2b) {
    const T nt = n + nb, delta = mb - mu;
    mu += delta * (nb / nt);
    sq += m2b + delta * delta * (n * nb / nt);
    n = nt;
  };
  if (steps > 0)
    for (int l = 0; l < kLanes; ++l) merge(T(steps), mean[l], m2[l]);
  for (int64_t j = steps * kLanes; j < d; ++j) merge(T(1), x[j], T(0));
  return {mu, sq};
}

/// gamma / beta (absent: ones / zeros) as T.
template <class T>
std::vector<T> param(const Tensor& t, int64_t d, double fill) {
  const std::vector<double> v = host(t, d, fill);
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd, T eps) {
  const int64_t d = x.shape().last(), rows = x.numel() / d;
  const std::vector<T> g = param<T>(gamma, d, 1), b = param<T>(beta, d, 0);
  const T* px = x.data<T>();
  T *py = y.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
  parallel_for(rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, d)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = px + r * d;
      const auto [mu, sq] = row_moments(xr, d);
      const T rs = T(1) / std::sqrt(sq / T(d) + eps);
      pm[r] = mu;
      pr[r] = rs;
      T* yr = py + r * d;
      for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - mu) * rs * g[j] + b[j];
    }
  });  // rows in parallel
}

template <class T>
void backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
              Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int64_t d = x.shape().last(), rows = x.numel() / d;
  const std::vector<T> g = param<T>(gamma, d, 1);
  const T *px = x.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>(), *pdy = dy.data<T>();
  // Chunks of rows in parallel, each with its own dgamma / dbeta sums (f64), added in chunk order
  // afterwards: the result does not depend on the thread count.
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(2 * chunks * d), 0.0);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<T> xh(static_cast<size_t>(d));
    for (int64_t c = c0; c < c1; ++c) {
      double *dg = part.data() + 2 * c * d, *db = dg + d;
      for (int64_t r = c * kChunk; r < std::min(rows, (c + 1) * kChunk); ++r) {
        const T *xr = px + r * d, *dyr = pdy + r * d, mu = pm[r], rs = pr[r];
        T la[kLanes] = {}, lb[kLanes] = {};  // sum g, sum g*xhat in lanes (g = dy * gamma)
        auto one = [&](int64_t j, int l) {
          const T h = (xr[j] - mu) * rs, gj = dyr[j] * g[j];
          xh[j] = h;
          la[l] += gj;
          lb[l] += gj * h;
          dg[j] += dyr[j] * h;
          db[j] += dyr[j];
        };
        int64_t j = 0;
        for (; j + kLanes <= d; j += kLanes)
          for (int l = 0; l < kLanes; ++l) one(j + l, l);
        for (; j < d; ++j) one(j, 0);
        if (!dx.defined()) continue;
        T a = 0, b = 0;
        for (int l = 0; l < kLanes; ++l) {
          a += la[l];
          b += lb[l];
        }
        T* dxr = dx.data<T>() + r * d;
        for (int64_t k = 0; k < d; ++k) dxr[k] += rs * (dyr[k] * g[k] - a / T(d) - xh[k] * b / T(d));
      }
    }
  });
  std::vector<double> dg(static_cast<size_t>(d), 0.0), db(static_cast<size_t>(d), 0.0);
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < d; ++j) {
      dg[j] += part[2 * c * d + j];
      db[j] += part[(2 * c + 1) * d + j];
    }
  if (dgamma.defined()) add_into(dgamma, dg);
  if (dbeta.defined()) add_into(dbeta, db);
}
}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps) {
  check_cpu_float("layer_norm", x);
  if (x.dtype() == DType::f64)
    forward<double>(x, gamma, beta, y, mean, rstd, eps);
  else
    forward<float>(x, gamma, beta, y, mean, rstd, eps);
}

void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  check_cpu_float("layer_norm backward", x);
  if (x.dtype() == DType::f64)
    backward<double>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  else
    backward<float>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}
}  // namespace cpu

namespace {
int64_t check_common(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd) {
  MOE_CHECK(x.shape().ndim() >= 1 && x.shape().last() >= 1, op, ": the input needs a non-empty last axis, not shape ",
            x.shape());
  const int64_t d = x.shape().last();
  check_norm_param(op, "gamma", gamma, x, d);
  check_same_device(op, x, mean, rstd);
  check_shape(op, "mean", mean, Shape{x.numel() / d});
  check_shape(op, "rstd", rstd, Shape{x.numel() / d});
  check_dtype(op, "mean", mean, norm_stat_dtype(x.dtype()));
  check_dtype(op, "rstd", rstd, norm_stat_dtype(x.dtype()));
  return d;
}
}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps) {
  const char* op = "layer_norm";
  const int64_t d = check_common(op, x, gamma, mean, rstd);
  check_norm_param(op, "beta", beta, x, d);
  MOE_CHECK(!gamma.defined() || !beta.defined() || gamma.dtype() == beta.dtype(), op, ": gamma (",
            dtype_name(gamma.dtype()), ") and beta (", dtype_name(beta.dtype()), ") must have the same dtype");
  MOE_CHECK(eps >= 0.f, op, ": eps must be >= 0, not ", eps);
  check_same_device(op, x, y);
  check_shape(op, "output", y, x.shape());
  check_dtype(op, "output", y, x.dtype());
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, layer_norm_forward, x, gamma, beta, y, mean, rstd, eps);
}

void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const char* op = "layer_norm backward";
  const int64_t d = check_common(op, x, gamma, mean, rstd);
  check_same_device(op, x, dy, dx, dgamma, dbeta);
  check_shape(op, "output gradient", dy, x.shape());
  check_dtype(op, "output gradient", dy, x.dtype());
  if (dx.defined()) {
    check_shape(op, "input gradient", dx, x.shape());
    check_dtype(op, "input gradient", dx, x.dtype());
  }
  MOE_CHECK(!dgamma.defined() || gamma.defined(), op, ": dgamma requested without gamma");
  if (dgamma.defined()) {
    check_shape(op, "gamma gradient", dgamma, Shape{d});
    check_dtype(op, "gamma gradient", dgamma, gamma.dtype());
  }
  check_norm_param(op, "beta gradient", dbeta, x, d);
  MOE_CHECK(!dbeta.defined() || !gamma.defined() || gamma.dtype() == dbeta.dtype(), op,
            ": gamma and the beta gradient must have the same dtype");
  if (x.numel() == 0 || (!dx.defined() && !dgamma.defined() && !dbeta.defined())) return;
  MOE_DISPATCH(x, layer_norm_backward, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

}  // namespace moe
