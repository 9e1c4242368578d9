// CPU reference of the axis reductions (see reduce.h for the math), sum_to_shape and dispatch.
// Accumulates in double for both f32 and f64; two passes for logsumexp (max, then sum) and var
// (mean, then squared deviations).
#include "ops/reduce.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/binary_math.h"
#include "ops/dispatch.h"

namespace moe {

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "mean", "max", "logsumexp", "var"};
  return names[static_cast<int>(op)];
}

Shape reduced_shape(const Shape& x, int axis, bool keepdim) {
  const int ax = x.axis(axis);
  std::vector<int64_t> dims;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i != ax)
      dims.push_back(x[i]);
    else if (keepdim)
      dims.push_back(1);
  }
  return Shape(dims);
}

namespace cpu {
namespace {
template <class T>
void forward(ReduceOp op, const T* x, int64_t outer, int64_t n, int64_t inner, T* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const T* p = x + o * n * inner + j;
      double acc = 0, m = -std::numeric_limits<double>::infinity();
      if (op == ReduceOp::max || op == ReduceOp::logsumexp)
        for (int64_t k = 0; k < n; ++k) m = std::max(m, double(p[k * inner]));
      if (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::var)
        for (int64_t k = 0; k < n; ++k) acc += p[k * inner];
      double r = acc;
      if (op == ReduceOp::mean)
        r = acc / double(n);
      else if (op == ReduceOp::max)
        r = m;
      else if (op == ReduceOp::logsumexp) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += std::exp(double(p[k * inner]) - m);
        r = std::isinf(m) ? m : m + std::log(s);
      } else if (op == ReduceOp::var) {
        const double mean = acc / double(n);
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += (p[k * inner] - mean) * (p[k * inner] - mean);
        r = s / double(n);
      }
      y[o * inner + j] = static_cast<T>(r);
    }
}

template <class T>
void backward(ReduceOp op, const T* x, int64_t outer, int64_t n, int64_t inner, const T* y, const T* dy, T* dx) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t base = o * n * inner + j;
      const double g = dy[o * inner + j], yv = y[o * inner + j];
      double mean = 0;
      if (op == ReduceOp::var) {
        for (int64_t k = 0; k < n; ++k) mean += x[base + k * inner];
        mean /= double(n);
      }
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = base + k * inner;
        switch (op) {
          case ReduceOp::sum:
            dx[i] += T(g);
            break;
          case ReduceOp::mean:
            dx[i] += T(g / double(n));
            break;
          case ReduceOp::logsumexp:
            dx[i] += T(g * std::exp(double(x[i]) - yv));
            break;
          case ReduceOp::var:
            dx[i] += T(g * 2.0 * (double(x[i]) - mean) / double(n));
            break;
          case ReduceOp::max:
            if (double(x[i]) == yv) {
              dx[i] += T(g);
              k = n;  // only the first maximal element
            }
            break;
        }
      }
    }
}

template <class T>
void sum_to(const Tensor& x, const Shape& shape, Tensor& out) {
  // Reuse the broadcast index map: `shape` plays operand a, x itself is the output.
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(shape, x.shape(), x.shape()));
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  const T* px = x.data<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    int64_t io, ix_self;
    ix.map(i, io, ix_self);
    acc[static_cast<size_t>(io)] += px[i];
  }
  T* po = out.data<T>();
  for (size_t i = 0; i < acc.size(); ++i) po[i] += static_cast<T>(acc[i]);
}
}  // namespace

void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out) {
  check_cpu_float(reduce_op_name(op), x);
  const Shape& s = x.shape();
  if (x.dtype() == DType::f64)
    forward<double>(op, x.data<double>(), s.outer(axis), s[axis], s.inner(axis), out.data<double>());
  else
    forward<float>(op, x.data<float>(), s.outer(axis), s[axis], s.inner(axis), out.data<float>());
}

void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx) {
  check_cpu_float(reduce_op_name(op), x);
  const Shape& s = x.shape();
  if (x.dtype() == DType::f64)
    backward<double>(op, x.data<double>(), s.outer(axis), s[axis], s.inner(axis), out.data<double>(),
                     dout.data<double>(), dx.data<double>());
  else
    backward<float>(op, x.data<float>(), s.outer(axis), s[axis], s.inner(axis), out.data<float>(), dout.data<float>(),
                    dx.data<float>());
}

void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out) {
  check_cpu_float("sum_to_shape", x);
  if (x.dtype() == DType::f64)
    sum_to<double>(x, shape, out);
  else
    sum_to<float>(x, shape, out);
}
}  // namespace cpu

namespace {
void check_reduce(const char* name, const Tensor& x, int axis, const Tensor& out) {
  MOE_CHECK(x.defined() && out.defined(), name, ": undefined tensor");
  MOE_CHECK(is_floating(x.dtype()), name, ": x must be floating point, not ", dtype_name(x.dtype()));
  MOE_CHECK(x.shape().ndim() > 0 && axis >= -x.shape().ndim() && axis < x.shape().ndim(), name, ": axis ", axis,
            " out of range for shape ", x.shape());
  check_same_device(name, x, out);
  check_dtype(name, "output", out, x.dtype());
  const Shape dropped = reduced_shape(x.shape(), axis, false), kept = reduced_shape(x.shape(), axis, true);
  MOE_CHECK(out.shape() == dropped || out.shape() == kept, name, ": output has shape ", out.shape(), " but reducing ",
            x.shape(), " over axis ", axis, " gives ", dropped, " (or ", kept, " with keepdim)");
}
}  // namespace

void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out) {
  const char* name = reduce_op_name(op);
  check_reduce(name, x, axis, out);
  if (out.numel() == 0) return;
  if (x.shape()[axis] == 0) {
    MOE_CHECK(op == ReduceOp::sum, name, ": cannot reduce over axis ", axis, " of size 0 in shape ", x.shape());
    out.zero_();
    return;
  }
  MOE_DISPATCH(x, reduce_forward, op, x, axis, out);
}

void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx) {
  const char* name = reduce_op_name(op);
  check_reduce(name, x, axis, out);
  check_same_device(name, x, dout, dx);
  MOE_CHECK(dout.numel() == out.numel() && dout.dtype() == x.dtype(), name, ": output gradient ", dout.shape(), " ",
            dtype_name(dout.dtype()), " does not match the output ", out.shape(), " ", dtype_name(out.dtype()));
  check_shape(name, "input gradient", dx, x.shape());
  check_dtype(name, "input gradient", dx, x.dtype());
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, reduce_backward, op, x, axis, out, dout, dx);
}

void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out) {
  MOE_CHECK(x.defined() && out.defined(), "sum_to_shape: undefined tensor");
  MOE_CHECK(is_floating(x.dtype()), "sum_to_shape: x must be floating point, not ", dtype_name(x.dtype()));
  check_same_device("sum_to_shape", x, out);
  MOE_CHECK(shape.ndim() <= x.shape().ndim() && broadcast_shapes(shape, x.shape(), "sum_to_shape") == x.shape(),
            "sum_to_shape: shape ", shape, " does not broadcast to the input shape ", x.shape());
  check_shape("sum_to_shape", "output", out, shape);
  check_dtype("sum_to_shape", "output", out, x.dtype());
  if (x.numel() == 0 || out.numel() == 0) return;
  MOE_DISPATCH(x, sum_to_shape, x, shape, out);
}

}  // namespace moe
