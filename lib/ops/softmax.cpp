// CPU reference of softmax / log-softmax over the last axis with an optional keep-mask (math in
// softmax.h), in f32 and f64, plus the argument checks and device dispatch. Per row: a max pass,
// one pass of exp and sum (the only exp of an element), one output pass, all over the row while it
// is in cache, vectorised (lanes of partial sums, f32 exp_fast of ops/cpu_math.h; 8 lanes wide on AVX2 through
// run_wide of ops/cpu_isa.h, the same bytes).
// Covered by tests/ops/softmax_test.cpp.
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"

namespace moe {

int64_t softmax_mask_stride(const char* op, const Tensor& x, const Tensor& mask) {
  if (!mask.defined()) return 0;
  const int64_t cols = x.shape().last();
  MOE_CHECK(mask.dtype() == DType::u8, op, ": the mask must be u8 (1 keeps, 0 masks), not ", dtype_name(mask.dtype()));
  check_same_device(op, x, mask);
  if (mask.shape() == x.shape()) return cols;
  bool row = mask.shape().ndim() >= 1 && mask.shape().last() == cols && mask.numel() == cols;
  MOE_CHECK(row, op, ": mask of shape ", mask.shape(), " does not fit input ", x.shape(),
            " (it must have the same shape or be one row [1.., ", cols, "])");
  return 0;
}

namespace cpu {
namespace {
/// One row: the max over kept entries; e_j = exp(x_j - max) (0 where masked) into y; their sum
/// (kLanes partial sums in f32 over blocks of 64, added in f64); then y from the sum. log-softmax without a mask
/// sums the e_j as it computes them (the same sums) and writes y once. The row stays
/// in L1/L2 between the passes, each pass is a simple loop that vectorises (f32: exp_fast), and
/// exp is taken once per element.
template <class T>
void row_forward(const T* xr, const uint8_t* mr, T* yr, int64_t cols, bool log) {
  const T ninf = -std::numeric_limits<T>::infinity();
  T m = ninf;
  if (mr) {
    for (int64_t j = 0; j < cols; ++j)
      if (mr[j]) m = std::max(m, xr[j]);
  } else {
    m = row_max(xr, cols);
  }
  if (m == ninf) {  // nothing kept
    std::fill(yr, yr + cols, log ? ninf : T(0));
    return;
  }
  const auto e_of = [m](T v) { return masked_exp(v, m); };
  if (log && !mr) {  // the sum only: no e_j stored and read back (decoding's log-probabilities over the vocabulary)
    const T lse = static_cast<T>(m + std::log(row_sum(xr, cols, e_of)));
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] - lse;
    return;
  }
  for (int64_t k = 0; k < cols; ++k) yr[k] = e_of(xr[k]);
  if (mr)
    for (int64_t k = 0; k < cols; ++k) yr[k] = mr[k] ? yr[k] : T(0);
  const double s = row_sum(yr, cols, [](T v) { return v; });
  if (log) {
    const T lse = static_cast<T>(m + std::log(s));
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] - lse;  // -inf stays -inf
    if (mr)
      for (int64_t c = 0; c < cols; ++c) yr[c] = mr[c] ? yr[c] : ninf;
  } else {
    const T inv = static_cast<T>(1.0 / s);
    for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
}

template <class T>
void forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log, int64_t mask_stride) {
  const int64_t cols = x.shape().last(), rows = cols ? x.numel() / cols : 0;
  const T* px = x.data<T>();
  const uint8_t* pm = mask.defined() ? mask.data<uint8_t>() : nullptr;
  T* py = y.data<T>();
  parallel_for(rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, cols)),
               [&](int64_t r0, int64_t r1) {
                 run_wide([&] {
                   for (int64_t r = r0; r < r1; ++r)
                     row_forward(px + r * cols, pm ? pm + r * mask_stride : nullptr, py + r * cols, cols, log);
                 });
               });  // rows in parallel
}

/// softmax: dx += y (dy - sum dy y); log_softmax: dx += dy - exp(y) sum dy (masked entries, y = -inf, get 0).
template <class T>
void row_backward(const T* yr, const T* dyr, T* dxr, int64_t cols, bool log) {
  const T ninf = -std::numeric_limits<T>::infinity();
  double lanes[kLanes] = {};  // in f64, as the forward's sum
  int64_t j = 0;
  auto term = [&](int64_t c) { return log ? (yr[c] == ninf ? T(0) : dyr[c]) : dyr[c] * yr[c]; };
  for (; j + kLanes <= cols; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += term(j + l);
  for (; j < cols; ++j) lanes[0] += term(j);
  double s = 0;
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  const T st = static_cast<T>(s);
  for (int64_t c = 0; c < cols; ++c) {
    if (log)
      dxr[c] += yr[c] == ninf ? T(0) : dyr[c] - exp_of(yr[c]) * st;
    else
      dxr[c] += yr[c] * (dyr[c] - st);
  }
}

template <class T>
void backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  const int64_t cols = y.shape().last(), rows = cols ? y.numel() / cols : 0;
  const T *py = y.data<T>(), *pdy = dy.data<T>();
  T* pdx = dx.data<T>();
  parallel_for(rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, cols)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r)
                   row_backward(py + r * cols, pdy + r * cols, pdx + r * cols, cols, log);
               });  // rows in parallel
}
}  // namespace

void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_cpu_float(op, x);
  const int64_t stride = softmax_mask_stride(op, x, mask);
  if (x.dtype() == DType::f64)
    forward<double>(x, mask, y, log, stride);
  else
    forward<float>(x, mask, y, log, stride);
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  check_cpu_float(log ? "log_softmax backward" : "softmax backward", y);
  if (y.dtype() == DType::f64)
    backward<double>(y, dy, dx, log);
  else
    backward<float>(y, dy, dx, log);
}
}  // namespace cpu

void softmax_forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  MOE_CHECK(x.shape().ndim() >= 1, op, ": the input must have at least one axis, not shape ", x.shape());
  check_same_device(op, x, y);
  check_shape(op, "output", y, x.shape());
  check_dtype(op, "output", y, x.dtype());
  softmax_mask_stride(op, x, mask);
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, softmax_forward, x, mask, y, log);
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  check_same_device(op, y, dy, dx);
  check_shape(op, "output gradient", dy, y.shape());
  check_shape(op, "input gradient", dx, y.shape());
  check_dtype(op, "output gradient", dy, y.dtype());
  check_dtype(op, "input gradient", dx, y.dtype());
  if (y.numel() == 0) return;
  MOE_DISPATCH(y, softmax_backward, y, dy, dx, log);
}

}  // namespace moe
