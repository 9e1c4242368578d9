// CPU reference of index_select / index_add / gather_last / scatter_add_last (see
// gather_scatter.h) and the checked entry points. Covered by tests/ops/gather_scatter_test.cpp.
#include "ops/gather_scatter.h"

#include <cstring>

#include "ops/dispatch.h"
#include "ops/index_errors.h"

namespace moe {
namespace {
void check_index(IndexOp op, int64_t i, int64_t bound, int64_t pos) {
  MOE_CHECK(i >= 0 && i < bound, index_op_name(op), ": index ", i, " at position ", pos, " is out of range [0, ", bound,
            ")");
}
void check_idx_tensor(const char* op, const Tensor& idx) {
  MOE_CHECK(idx.dtype() == DType::i32, op, ": indices must be i32, not ", dtype_name(idx.dtype()), " (shape ",
            idx.shape(), ")");
}
Shape leading(const Shape& s) {
  std::vector<int64_t> d = s.vec();
  d.pop_back();
  return Shape(d);
}
void check_last_axis_shapes(const char* op, const Shape& big, const Shape& idx, const Shape& small) {
  MOE_CHECK(big.ndim() >= 1 && idx.ndim() == big.ndim() && leading(idx) == leading(big), op, ": indices ", idx,
            " must match ", big, " on every axis but the last");
  MOE_CHECK(small == idx, op, ": values have shape ", small, " but the indices have shape ", idx);
}
}  // namespace

namespace cpu {
namespace {
template <class T>
void add_row(const T* s, T* d, int64_t n) {
  for (int64_t c = 0; c < n; ++c) d[c] += s[c];
}
}  // namespace

void index_select(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  const int32_t* id = idx.data<int32_t>();
  const int64_t M = idx.numel(), N = x.shape()[0], R = x.shape().inner(0);
  for (int64_t m = 0; m < M; ++m) check_index(IndexOp::index_select, id[m], N, m);
  if (accumulate) check_cpu_float("index_select (accumulate)", x);
  const size_t es = dtype_size(x.dtype());
  for (int64_t m = 0; m < M; ++m) {
    if (!accumulate)
      std::memcpy(static_cast<char*>(out.raw()) + m * R * static_cast<int64_t>(es),
                  static_cast<const char*>(x.raw()) + id[m] * R * static_cast<int64_t>(es),
                  static_cast<size_t>(R) * es);
    else if (x.dtype() == DType::f64)
      add_row(x.data<double>() + id[m] * R, out.data<double>() + m * R, R);
    else
      add_row(x.data<float>() + id[m] * R, out.data<float>() + m * R, R);
  }
}

void index_add(Tensor& dst, const Tensor& idx, const Tensor& src) {
  check_cpu_float("index_add", dst);
  const int32_t* id = idx.data<int32_t>();
  const int64_t M = idx.numel(), N = dst.shape()[0], R = dst.shape().inner(0);
  for (int64_t m = 0; m < M; ++m) check_index(IndexOp::index_add, id[m], N, m);
  for (int64_t m = 0; m < M; ++m) {
    if (dst.dtype() == DType::f64)
      add_row(src.data<double>() + m * R, dst.data<double>() + id[m] * R, R);
    else
      add_row(src.data<float>() + m * R, dst.data<float>() + id[m] * R, R);
  }
}

namespace {
template <class T>
void gather_impl(const T* x, const int32_t* id, T* out, int64_t rows, int64_t V, int64_t k, bool acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const T v = x[r * V + id[r * k + j]];
      out[r * k + j] = acc ? out[r * k + j] + v : v;
    }
}
template <class T>
void scatter_impl(T* dst, const int32_t* id, const T* src, int64_t rows, int64_t V, int64_t k) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) dst[r * V + id[r * k + j]] += src[r * k + j];
}
void check_all(IndexOp op, const Tensor& idx, int64_t V) {
  const int32_t* id = idx.data<int32_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) check_index(op, id[i], V, i);
}
}  // namespace

void gather_last(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  check_cpu_float("gather_last", x);
  check_all(IndexOp::gather_last, idx, x.shape().last());
  const int64_t V = x.shape().last(), k = idx.shape().last(), rows = idx.numel() / (k ? k : 1);
  if (x.dtype() == DType::f64)
    gather_impl(x.data<double>(), idx.data<int32_t>(), out.data<double>(), rows, V, k, accumulate);
  else
    gather_impl(x.data<float>(), idx.data<int32_t>(), out.data<float>(), rows, V, k, accumulate);
}

void scatter_add_last(Tensor& dst, const Tensor& idx, const Tensor& src) {
  check_cpu_float("scatter_add_last", dst);
  check_all(IndexOp::scatter_add_last, idx, dst.shape().last());
  const int64_t V = dst.shape().last(), k = idx.shape().last(), rows = idx.numel() / (k ? k : 1);
  if (dst.dtype() == DType::f64)
    scatter_impl(dst.data<double>(), idx.data<int32_t>(), src.data<double>(), rows, V, k);
  else
    scatter_impl(dst.data<float>(), idx.data<int32_t>(), src.data<float>(), rows, V, k);
}
}  // namespace cpu

Shape index_select_shape(const char* op, const Shape& x, const Shape& idx) {
  MOE_CHECK(x.ndim() >= 1, op, ": the source ", x, " needs at least one axis");
  MOE_CHECK(idx.ndim() == 1, op, ": indices must be 1-D, not ", idx);
  return x.with(0, idx[0]);
}

void index_select_forward(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  check_idx_tensor("index_select", idx);
  check_same_device("index_select", x, idx, out);
  check_shape("index_select", "output", out, index_select_shape("index_select", x.shape(), idx.shape()));
  check_dtype("index_select", "output", out, x.dtype());
  if (out.numel() == 0) return;
  MOE_CHECK(x.numel() > 0, "index_select: ", idx.numel(), " indices into the empty source ", x.shape());
  MOE_DISPATCH(x, index_select, x, idx, out, accumulate);
}

void index_add_forward(Tensor& dst, const Tensor& idx, const Tensor& src) {
  check_idx_tensor("index_add", idx);
  check_same_device("index_add", dst, idx, src);
  check_shape("index_add", "source", src, index_select_shape("index_add", dst.shape(), idx.shape()));
  check_dtype("index_add", "source", src, dst.dtype());
  if (src.numel() == 0) return;
  MOE_CHECK(dst.numel() > 0, "index_add: ", idx.numel(), " indices into the empty destination ", dst.shape());
  MOE_DISPATCH(dst, index_add, dst, idx, src);
}

void gather_last_forward(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  check_idx_tensor("gather_last", idx);
  check_same_device("gather_last", x, idx, out);
  check_last_axis_shapes("gather_last", x.shape(), idx.shape(), out.shape());
  check_dtype("gather_last", "output", out, x.dtype());
  if (out.numel() == 0) return;
  MOE_CHECK(x.shape().last() > 0, "gather_last: indices ", idx.shape(), " into an empty last axis of ", x.shape());
  MOE_DISPATCH(x, gather_last, x, idx, out, accumulate);
}

void scatter_add_last_forward(Tensor& dst, const Tensor& idx, const Tensor& src) {
  check_idx_tensor("scatter_add_last", idx);
  check_same_device("scatter_add_last", dst, idx, src);
  check_last_axis_shapes("scatter_add_last", dst.shape(), idx.shape(), src.shape());
  check_dtype("scatter_add_last", "source", src, dst.dtype());
  if (src.numel() == 0) return;
  MOE_CHECK(dst.shape().last() > 0, "scatter_add_last: indices ", idx.shape(), " into an empty last axis of ",
            dst.shape());
  MOE_DISPATCH(dst, scatter_add_last, dst, idx, src);
}

}  // namespace moe
