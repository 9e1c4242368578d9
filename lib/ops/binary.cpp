// CPU reference of the broadcasting binary ops (see binary.h for the math) and their dispatch.
// Forward: runs along the innermost collapsed axis, each mapped to both operands' indices once (contiguous
// and broadcast operands get loops that vectorise); backward the same way, one operand at a time, accumulating
// straight into the (smaller) gradient of a broadcast operand.
#include "ops/binary.h"

#include <algorithm>
#include <type_traits>

#include "common/cpu_threads.h"
#include "ops/binary_math.h"
#include "ops/dispatch.h"

namespace moe {

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  return names[static_cast<int>(op)];
}

namespace cpu {
namespace {
/// f(std::integral_constant<BinaryOp, op>{}): the op as a compile-time constant, for the loops below.
template <class F>
void with_op(BinaryOp op, const F& f) {
  switch (op) {
    case BinaryOp::add:
      return f(std::integral_constant<BinaryOp, BinaryOp::add>{});
    case BinaryOp::sub:
      return f(std::integral_constant<BinaryOp, BinaryOp::sub>{});
    case BinaryOp::mul:
      return f(std::integral_constant<BinaryOp, BinaryOp::mul>{});
    case BinaryOp::div:
      return f(std::integral_constant<BinaryOp, BinaryOp::div>{});
    case BinaryOp::maximum:
      return f(std::integral_constant<BinaryOp, BinaryOp::maximum>{});
    case BinaryOp::minimum:
      return f(std::integral_constant<BinaryOp, BinaryOp::minimum>{});
  }
}

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

/// fn(ia, ib, i, n) for each run of n output elements from i along the innermost collapsed axis (within one
/// thread's part), ia and ib the operands' indices of its first element: one index mapping per run, not per element.
template <class F>
void for_runs(const BroadcastIndex& ix, int64_t total, int64_t min_per_thread, const F& fn) {
  const int64_t len = ix.ndim ? ix.dims[ix.ndim - 1] : 1;
  parallel_for(total, min_per_thread, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t n = std::min(hi, (i / len + 1) * len) - i;
      int64_t ia, ib;
      ix.map(i, ia, ib);
      fn(ia, ib, i, n);
      i += n;
    }
  });
}
int64_t inner_stride_a(const BroadcastIndex& ix) { return ix.ndim ? ix.stride_a[ix.ndim - 1] : 0; }
int64_t inner_stride_b(const BroadcastIndex& ix) { return ix.ndim ? ix.stride_b[ix.ndim - 1] : 0; }

template <class T>
void forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(a.shape(), b.shape(), out.shape()));
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  const int64_t sa = inner_stride_a(ix), sb = inner_stride_b(ix);
  with_op(op, [&](auto o) {
    for_runs(ix, n, kElementsPerThread, [&](int64_t ia, int64_t ib, int64_t i, int64_t len) {
      run<T, decltype(o)::value>(pa + ia, pb + ib, po + i, len, sa, sb);
    });
  });
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

template <class T>
void backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db) {
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(a.shape(), b.shape(), dout.shape()));
  const T *pa = a.data<T>(), *pb = b.data<T>(), *pg = dout.data<T>();
  // One operand after the other, so that da and db may be the same tensor (x op x).
  // In parallel only for an operand that is not broadcast (each output element then owns its gradient element).
  const int64_t sa = inner_stride_a(ix), sb = inner_stride_b(ix), n = dout.numel();
  T* pda = da ? da->data<T>() : nullptr;
  T* pdb = db ? db->data<T>() : nullptr;
  with_op(op, [&](auto o) {
    constexpr BinaryOp Op = decltype(o)::value;
    if (pda)
      for_runs(ix, n, a.numel() == n ? kElementsPerThread : n, [&](int64_t ia, int64_t ib, int64_t i, int64_t len) {
        run_grad<T, Op, false>(pa + ia, pb + ib, pg + i, pda + ia, len, sa, sb);
      });
    if (pdb)
      for_runs(ix, n, b.numel() == n ? kElementsPerThread : n, [&](int64_t ia, int64_t ib, int64_t i, int64_t len) {
        run_grad<T, Op, true>(pa + ia, pb + ib, pg + i, pdb + ib, len, sa, sb);
      });
  });
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
