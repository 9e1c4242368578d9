// CPU reference of softmax / log-softmax over the last axis with an optional keep-mask (math in
// softmax.h), in f32 and f64, plus the argument checks and device dispatch.
// Covered by tests/ops/softmax_test.cpp.
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_threads.h"
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
template <class T>
void forward(const Tensor& x, const Tensor& mask, Tensor& y, bool log, int64_t mask_stride) {
  const int64_t cols = x.shape().last(), rows = cols ? x.numel() / cols : 0;
  const T* px = x.data<T>();
  const uint8_t* pm = mask.defined() ? mask.data<uint8_t>() : nullptr;
  T* py = y.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  parallel_for(
      rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* xr = px + r * cols;
          const uint8_t* mr = pm ? pm + r * mask_stride : nullptr;
          T* yr = py + r * cols;
          auto kept = [&](int64_t j) { return (!mr || mr[j]) && xr[j] != ninf; };
          T m = ninf;
          for (int64_t j = 0; j < cols; ++j)
            if (kept(j) && xr[j] > m) m = xr[j];
          double s = 0;  // in f64: a sequential f32 sum of 32,000 terms is off by ~3e-5 (the CUDA tree sum by ~1e-7)
          for (int64_t j = 0; j < cols; ++j)
            if (kept(j)) s += std::exp(xr[j] - m);
          const T lse = static_cast<T>(m + std::log(s));
          for (int64_t j = 0; j < cols; ++j) {
            if (!kept(j) || s == 0)
              yr[j] = log ? ninf : T(0);
            else
              yr[j] = log ? xr[j] - lse : static_cast<T>(std::exp(xr[j] - m) / s);
          }
        }
      });  // rows in parallel
}

template <class T>
void backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
  const int64_t cols = y.shape().last(), rows = cols ? y.numel() / cols : 0;
  const T *py = y.data<T>(), *pdy = dy.data<T>();
  T* pdx = dx.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  parallel_for(rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, cols)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const T *yr = py + r * cols, *dyr = pdy + r * cols;
                   T* dxr = pdx + r * cols;
                   double s = 0;  // in f64, as the forward's sum
                   for (int64_t j = 0; j < cols; ++j) {
                     if (log)
                       s += yr[j] == ninf ? T(0) : dyr[j];
                     else
                       s += dyr[j] * yr[j];
                   }
                   for (int64_t j = 0; j < cols; ++j) {
                     if (log)
                       dxr[j] += yr[j] == ninf ? T(0) : static_cast<T>(dyr[j] - std::exp(yr[j]) * s);
                     else
                       dxr[j] += static_cast<T>(yr[j] * (dyr[j] - s));
                   }
                 }
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
