// CPU reference of the broadcasting binary ops (see binary.h for the math) and their dispatch.
// Forward: runs along the innermost collapsed axis, each mapped to both operands' indices once (contiguous
// and broadcast operands get loops that vectorise); backward the same way, one operand at a time, accumulating
// straight into the (smaller) gradient of a broadcast operand.
#include "ops/binary.h"

#include <algorithm>

#include "ops/binary_math.h"
#include "common/cpu_threads.h"
#include "ops/dispatch.h"

namespace moe {

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  return names[static_cast<int>(op)];
}

namespace cpu {
namespace {
/// po[j] = op(pa[j * sa], pb[j * sb]) for j < n, the op fixed at compile time and the common strides (both
/// operands contiguous, one of them broadcast) as loops of their own, so that they vectorise.
template <class T, BinaryOp Op>
void run(const T* pa, const T* pb, T* po, int64_t n, int64_t sa, int64_t sb) {
  if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j) po[j] = binary_value<T>(Op, pa[j], pb[j]);
  } else if (sa == 1 && sb == 0) {
    const T y = pb[0];
    for (int64_t j = 0; j < n; ++j) po[j] = binary_value<T>(Op, pa[j], y);
  } else if (sa == 0 && sb == 1) {
    const T x = pa[0];
    for (int64_t j = 0; j < n; ++j) po[j] = binary_value<T>(Op, x, pb[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) po[j] = binary_value<T>(Op, pa[j * sa], pb[j * sb]);
  }
}

template <class T, BinaryOp Op>
void forward_op(const BroadcastIndex& ix, const T* pa, const T* pb, T* po, int64_t total) {
  // runs along the innermost collapsed axis: one index mapping per run instead of one per element
  const int64_t len = ix.ndim ? ix.dims[ix.ndim - 1] : 1;
  const int64_t sa = ix.ndim ? ix.stride_a[ix.ndim - 1] : 0, sb = ix.ndim ? ix.stride_b[ix.ndim - 1] : 0;
  parallel_for(total, kElementsPerThread, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t n = std::min(hi, (i / len + 1) * len) - i;
      int64_t ia, ib;
      ix.map(i, ia, ib);
      run<T, Op>(pa + ia, pb + ib, po + i, n, sa, sb);
      i += n;
    }
  });
}

template <class T>
void forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(a.shape(), b.shape(), out.shape()));
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  switch (op) {
    case BinaryOp::add:
      return forward_op<T, BinaryOp::add>(ix, pa, pb, po, n);
    case BinaryOp::sub:
      return forward_op<T, BinaryOp::sub>(ix, pa, pb, po, n);
    case BinaryOp::mul:
      return forward_op<T, BinaryOp::mul>(ix, pa, pb, po, n);
    case BinaryOp::div:
      return forward_op<T, BinaryOp::div>(ix, pa, pb, po, n);
    case BinaryOp::maximum:
      return forward_op<T, BinaryOp::maximum>(ix, pa, pb, po, n);
    case BinaryOp::minimum:
      return forward_op<T, BinaryOp::minimum>(ix, pa, pb, po, n);
  }
}

/// pd[j * sd] += pg[j] * d op(pa[j * sa], pb[j * sb]) / d(a or b) for j < n, sd the differentiated operand's
/// stride; sd 0 (an operand broadcast along the run) sums into one element in j's order, as an element-wise
/// loop would, so the result does not depend on the runs.
template <class T, BinaryOp Op, bool WrtB>
void run_grad(const T* pa, const T* pb, const T* pg, T* pd, int64_t n, int64_t sa, int64_t sb) {
  const int64_t sd = WrtB ? sb : sa;
  if (sd == 0) {
    T acc = *pd;
    for (int64_t j = 0; j < n; ++j) acc += pg[j] * binary_partial<T>(Op, pa[j * sa], pb[j * sb], WrtB);
    *pd = acc;
  } else if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j) pd[j] += pg[j] * binary_partial<T>(Op, pa[j], pb[j], WrtB);
  } else {
    for (int64_t j = 0; j < n; ++j) pd[j * sd] += pg[j] * binary_partial<T>(Op, pa[j * sa], pb[j * sb], WrtB);
  }
}

/// One operand's gradient, run by run along the innermost collapsed axis (as forward_op); in parallel only
/// when the operand is not broadcast (each output element then owns its gradient element).
template <class T, BinaryOp Op, bool WrtB>
void backward_op(const BroadcastIndex& ix, const T* pa, const T* pb, const T* pg, T* pd, int64_t total, bool own) {
  const int64_t len = ix.ndim ? ix.dims[ix.ndim - 1] : 1;
  const int64_t sa = ix.ndim ? ix.stride_a[ix.ndim - 1] : 0, sb = ix.ndim ? ix.stride_b[ix.ndim - 1] : 0;
  parallel_for(total, own ? kElementsPerThread : total, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t n = std::min(hi, (i / len + 1) * len) - i;
      int64_t ia, ib;
      ix.map(i, ia, ib);
      run_grad<T, Op, WrtB>(pa + ia, pb + ib, pg + i, pd + (WrtB ? ib : ia), n, sa, sb);
      i += n;
    }
  });
}

template <class T, bool WrtB>
void backward_operand(BinaryOp op, const BroadcastIndex& ix, const T* pa, const T* pb, const T* pg, T* pd,
                      int64_t total, bool own) {
  switch (op) {
    case BinaryOp::add:
      return backward_op<T, BinaryOp::add, WrtB>(ix, pa, pb, pg, pd, total, own);
    case BinaryOp::sub:
      return backward_op<T, BinaryOp::sub, WrtB>(ix, pa, pb, pg, pd, total, own);
    case BinaryOp::mul:
      return backward_op<T, BinaryOp::mul, WrtB>(ix, pa, pb, pg, pd, total, own);
    case BinaryOp::div:
      return backward_op<T, BinaryOp::div, WrtB>(ix, pa, pb, pg, pd, total, own);
    case BinaryOp::maximum:
      return backward_op<T, BinaryOp::maximum, WrtB>(ix, pa, pb, pg, pd, total, own);
    case BinaryOp::minimum:
      return backward_op<T, BinaryOp::minimum, WrtB>(ix, pa, pb, pg, pd, total, own);
  }
}

template <class T>
void backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db) {
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(a.shape(), b.shape(), dout.shape()));
  const T *pa = a.data<T>(), *pb = b.data<T>(), *pg = dout.data<T>();
  // One operand after the other, so that da and db may be the same tensor (x op x).
  if (da) backward_operand<T, false>(op, ix, pa, pb, pg, da->data<T>(), dout.numel(), a.numel() == dout.numel());
  if (db) backward_operand<T, true>(op, ix, pa, pb, pg, db->data<T>(), dout.numel(), b.numel() == dout.numel());
}
}  // namespace

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  check_cpu_float(binary_op_name(op), a);
  if (a.dtype() == DType::f64)
    forward<double>(op, a, b, out);
  else
    forward<float>(op, a, b, out);
}

void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db) {
  check_cpu_float(binary_op_name(op), a);
  if (a.dtype() == DType::f64)
    backward<double>(op, a, b, dout, da, db);
  else
    backward<float>(op, a, b, dout, da, db);
}
}  // namespace cpu

namespace {
void check_operands(const char* name, const Tensor& a, const Tensor& b) {
  MOE_CHECK(a.defined() && b.defined(), name, ": an operand is undefined");
  MOE_CHECK(a.dtype() == b.dtype(), name, ": operands have different dtypes (", dtype_name(a.dtype()), " ", a.shape(),
            " and ", dtype_name(b.dtype()), " ", b.shape(), "); cast one first");
  MOE_CHECK(is_floating(a.dtype()), name, ": operands must be floating point, not ", dtype_name(a.dtype()));
}
}  // namespace

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const char* name = binary_op_name(op);
  check_operands(name, a, b);
  check_same_device(name, a, b, out);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  MOE_CHECK(out.shape() == shape, name, ": output has shape ", out.shape(), " but operands ", a.shape(), " and ",
            b.shape(), " broadcast to ", shape);
  check_dtype(name, "output", out, a.dtype());
  MOE_DISPATCH(a, binary_forward, op, a, b, out);
}

void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db) {
  const char* name = binary_op_name(op);
  check_operands(name, a, b);
  check_same_device(name, a, b, dout);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  MOE_CHECK(dout.shape() == shape, name, ": output gradient has shape ", dout.shape(), " but operands ", a.shape(),
            " and ", b.shape(), " broadcast to ", shape);
  check_dtype(name, "output gradient", dout, a.dtype());
  if (da) {
    check_same_device(name, a, *da);
    check_shape(name, "gradient of a", *da, a.shape());
    check_dtype(name, "gradient of a", *da, a.dtype());
  }
  if (db) {
    check_same_device(name, b, *db);
    check_shape(name, "gradient of b", *db, b.shape());
    check_dtype(name, "gradient of b", *db, b.dtype());
  }
  if ((!da && !db) || dout.numel() == 0) return;
  MOE_DISPATCH(a, binary_backward, op, a, b, dout, da, db);
}

}  // namespace moe
