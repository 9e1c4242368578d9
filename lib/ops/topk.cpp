// CPU reference of top-k along the last axis (see topk.h for the ordering) and its dispatch.
// Per row: std::partial_sort of the positions with the (value desc, index asc) order, O(n log k).
// Covered by tests/ops/topk_test.cpp.
#include "ops/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/dispatch.h"

namespace moe {
namespace cpu {
namespace {
template <class T>
void forward(const Tensor& x, Tensor& values, Tensor& indices) {
  const int64_t n = x.shape().last(), k = values.shape().last(), rows = n ? x.numel() / n : 0;
  const T* px = x.data<T>();
  T* pv = values.data<T>();
  int32_t* pi = indices.data<int32_t>();
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = px + r * n;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
      const T va = row[a], vb = row[b];
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na != nb) return na;
      if (!na && va != vb) return va > vb;
      return a < b;
    });
    for (int64_t j = 0; j < k; ++j) {
      pi[r * k + j] = order[static_cast<size_t>(j)];
      pv[r * k + j] = row[order[static_cast<size_t>(j)]];
    }
  }
}
template <class T>
void backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx) {
  const int64_t n = dx.shape().last(), k = dvalues.shape().last(), rows = k ? dvalues.numel() / k : 0;
  const int32_t* pi = indices.data<int32_t>();
  const T* pdv = dvalues.data<T>();
  T* pdx = dx.data<T>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t i = pi[r * k + j];
      MOE_CHECK(i >= 0 && i < n, "topk backward: index ", i, " at row ", r, " is outside [0, ", n, ")");
      pdx[r * n + i] += pdv[r * k + j];
    }
}
}  // namespace

void topk_forward(const Tensor& x, Tensor& values, Tensor& indices) {
  check_cpu_float("topk", x);
  if (x.dtype() == DType::f64)
    forward<double>(x, values, indices);
  else
    forward<float>(x, values, indices);
}
void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx) {
  check_cpu_float("topk backward", dx);
  if (dx.dtype() == DType::f64)
    backward<double>(indices, dvalues, dx);
  else
    backward<float>(indices, dvalues, dx);
}
}  // namespace cpu

void topk_forward(const Tensor& x, Tensor& values, Tensor& indices) {
  check_same_device("topk", x, values, indices);
  MOE_CHECK(x.shape().ndim() >= 1, "topk: x must have at least one axis, got shape ", x.shape());
  const int64_t n = x.shape().last(), k = values.shape().ndim() ? values.shape().last() : 0;
  MOE_CHECK(k >= 1 && k <= n, "topk: k = ", k, " must be in [1, ", n, "] for x of shape ", x.shape());
  MOE_CHECK(n < (int64_t(1) << 31), "topk: the last axis of x ", x.shape(), " is too long for i32 indices");
  check_shape("topk", "values", values, x.shape().with(-1, k));
  check_shape("topk", "indices", indices, x.shape().with(-1, k));
  check_dtype("topk", "values", values, x.dtype());
  check_dtype("topk", "indices", indices, DType::i32);
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, topk_forward, x, values, indices);
}

void topk_backward(const Tensor& indices, const Tensor& dvalues, Tensor& dx) {
  check_same_device("topk backward", indices, dvalues, dx);
  MOE_CHECK(dx.shape().ndim() >= 1, "topk backward: dx must have at least one axis, got shape ", dx.shape());
  check_shape("topk backward", "output gradient", dvalues, indices.shape());
  check_shape("topk backward", "input gradient", dx, indices.shape().with(-1, dx.shape().last()));
  check_dtype("topk backward", "indices", indices, DType::i32);
  check_dtype("topk backward", "output gradient", dvalues, dx.dtype());
  if (dvalues.numel() == 0) return;
  MOE_DISPATCH(dx, topk_backward, indices, dvalues, dx);
}

}  // namespace moe
