// CPU reference of the element-wise unary ops (see unary.h for the math) and their dispatch; f32 tanh and
// sigmoid by cpu_math.h's tanh_fast and sigmoid_fast. Covered by tests/ops/unary_test.cpp.
#include "ops/unary.h"

#include <type_traits>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"
#include "ops/unary_math.h"

namespace moe {

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"relu", "gelu", "tanh", "sigmoid", "softplus", "exp",    "log",
                                "sqrt", "erf",  "normcdf", "neg",  "square",  "abs", "scale"};
  return names[static_cast<int>(op)];
}

namespace cpu {
namespace {
/// y[i] = f(x[i]) over n elements (restrict parameters: the loop vectorises inside run_wide).
template <class F>
void map_f32(const float* __restrict x, float* __restrict y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <class T>
void forward(UnaryOp op, const Tensor& x, Tensor& y, T alpha, T beta) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    // f32 tanh and sigmoid by cpu_math.h's vectorisable forms (within 2.5 ulp of the library's; f64 and the
    // other ops keep unary_math.h's formulas, where a float argument would call the double library function).
    if (op == UnaryOp::tanh || op == UnaryOp::sigmoid) {
      parallel_for(x.numel(), kElementsPerThread, [&](int64_t lo, int64_t hi) {
        run_wide([&] {
          if (op == UnaryOp::tanh)
            map_f32(px + lo, py + lo, hi - lo, [](float v) { return tanh_fast(v); });
          else
            map_f32(px + lo, py + lo, hi - lo, [](float v) { return sigmoid_fast(v); });
        });
      });
      return;
    }
  }
  parallel_for(x.numel(), kElementsPerThread, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = unary_value<T>(op, px[i], alpha, beta);
  });
}
template <class T>
void backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, T alpha) {
  const T *px = x.data<T>(), *py = y.data<T>(), *pdy = dy.data<T>();
  T* pdx = dx.data<T>();
  parallel_for(x.numel(), kElementsPerThread, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pdx[i] += pdy[i] * unary_derivative<T>(op, px[i], py[i], alpha);
  });
}
}  // namespace

void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha, float beta) {
  check_cpu_float(unary_op_name(op), x);
  if (x.dtype() == DType::f64) forward<double>(op, x, y, alpha, beta);
  else forward<float>(op, x, y, alpha, beta);
}

void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha) {
  check_cpu_float(unary_op_name(op), x);
  if (x.dtype() == DType::f64) backward<double>(op, x, y, dy, dx, alpha);
  else backward<float>(op, x, y, dy, dx, alpha);
}
}  // namespace cpu

void unary_forward(UnaryOp op, const Tensor& x, Tensor& y, float alpha, float beta) {
  const char* name = unary_op_name(op);
  check_same_device(name, x, y);
  check_shape(name, "output", y, x.shape());
  check_dtype(name, "output", y, x.dtype());
  MOE_DISPATCH(x, unary_forward, op, x, y, alpha, beta);
}

void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, float alpha) {
  const char* name = unary_op_name(op);
  check_same_device(name, x, y, dy, dx);
  // The CUDA kernel reads all four through x's element type: a mismatch would be reinterpreted.
  check_shape(name, "output", y, x.shape());
  check_shape(name, "output gradient", dy, x.shape());
  check_shape(name, "input gradient", dx, x.shape());
  check_dtype(name, "output", y, x.dtype());
  check_dtype(name, "output gradient", dy, x.dtype());
  check_dtype(name, "input gradient", dx, x.dtype());
  MOE_DISPATCH(x, unary_backward, op, x, y, dy, dx, alpha);
}

}  // namespace moe
