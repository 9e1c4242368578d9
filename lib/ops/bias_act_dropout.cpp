// CPU kernels of the fused bias + activation + dropout (math in bias_act_dropout.h) and the
// dispatch. Forward: threads over rows, one pass. Backward: threads over blocks of columns, each
// streaming the rows once (as bias_grad does), so dx and the bias sums come from one pass and
// every column is summed in row order: the results equal dropout -> activation -> bias_grad bit
// for bit. The mask comes from ops/dropout.h's dropout_factors (Philox drawn in a vectorised loop
// once per four elements). Covered by tests/ops/bias_act_dropout_test.cpp.
#include "ops/bias_act_dropout.h"

#include <algorithm>

#include "common/cpu_threads.h"
#include "ops/dispatch.h"
#include "ops/dropout.h"
#include "ops/unary_math.h"

namespace moe {

namespace cpu {
namespace {
template <class T, UnaryOp A, bool Drop>
void forward(const T* x, const T* b, T* y, int64_t rows, int64_t n, DropoutMask m) {
  const T scale = T(1) / (T(1) - static_cast<T>(m.p));
  parallel_for(rows, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, n)), [&](int64_t lo, int64_t hi) {
    T k[kDropoutChunk];
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t c0 = 0; c0 < n; c0 += kDropoutChunk) {
        const int64_t w = std::min(kDropoutChunk, n - c0), off = i * n + c0;
        if constexpr (Drop) dropout_factors<T>(m.seed, m.rng_stream, m.p, scale, static_cast<uint64_t>(off), w, k);
        for (int64_t j = 0; j < w; ++j) {
          const T a = unary_value<T>(A, x[off + j] + b[c0 + j], T(1), T(0));
          if constexpr (Drop)
            y[off + j] = k[j] != T(0) ? a * k[j] : T(0);
          else
            y[off + j] = a;
        }
      }
  });
}

template <class T, UnaryOp A, bool Drop>
void backward(const T* x, const T* b, const T* dy, T* dx, T* db, int64_t rows, int64_t n, DropoutMask m) {
  const T scale = T(1) / (T(1) - static_cast<T>(m.p));
  const int64_t min_cols = std::max<int64_t>(16, kElementsPerThread / std::max<int64_t>(1, rows));
  parallel_for(n, min_cols, [&](int64_t lo, int64_t hi) {
    constexpr int64_t kBlock = kDropoutChunk;  // columns at once: their sums stay in L1
    T sums[kBlock], k[kBlock];
    for (int64_t c0 = lo; c0 < hi; c0 += kBlock) {
      const int64_t w = std::min(kBlock, hi - c0);
      std::fill(sums, sums + w, T(0));
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t off = i * n + c0;
        if constexpr (Drop) dropout_factors<T>(m.seed, m.rng_stream, m.p, scale, static_cast<uint64_t>(off), w, k);
        for (int64_t j = 0; j < w; ++j) {
          T g = dy[off + j];
          if constexpr (Drop) g = k[j] != T(0) ? g * k[j] : T(0);
          const T dz = g * unary_derivative<T>(A, x[off + j] + b[c0 + j], T(0), T(1));
          if (dx) dx[off + j] += dz;
          sums[j] += dz;
        }
      }
      if (db)
        for (int64_t j = 0; j < w; ++j) db[c0 + j] += sums[j];
    }
  });
}

/// Calls f.template operator()<T, A, Drop>() for the tensor's dtype, the activation and p > 0.
template <class F>
void with_types(DType dt, UnaryOp act, float p, F&& f) {
  auto on_act = [&]<class T>() {
    const bool drop = p > 0.f;
    if (act == UnaryOp::relu)
      drop ? f.template operator()<T, UnaryOp::relu, true>() : f.template operator()<T, UnaryOp::relu, false>();
    else
      drop ? f.template operator()<T, UnaryOp::gelu, true>() : f.template operator()<T, UnaryOp::gelu, false>();
  };
  if (dt == DType::f64)
    on_act.template operator()<double>();
  else
    on_act.template operator()<float>();
}
}  // namespace

void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y) {
  check_cpu_float("bias_act_dropout", x);
  const int64_t n = bias.numel(), rows = x.numel() / n;
  with_types(x.dtype(), act, mask.p, [&]<class T, UnaryOp A, bool D>() {
    forward<T, A, D>(x.data<T>(), bias.data<T>(), y.data<T>(), rows, n, mask);
  });
}

void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias) {
  check_cpu_float("bias_act_dropout backward", x);
  const int64_t n = bias.numel(), rows = x.numel() / n;
  with_types(x.dtype(), act, mask.p, [&]<class T, UnaryOp A, bool D>() {
    backward<T, A, D>(x.data<T>(), bias.data<T>(), dy.data<T>(), dx ? dx->data<T>() : nullptr,
                      dbias ? dbias->data<T>() : nullptr, rows, n, mask);
  });
}
}  // namespace cpu

namespace {
void check_args(const char* op, const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask) {
  MOE_CHECK(act == UnaryOp::relu || act == UnaryOp::gelu, op, ": the activation must be relu or gelu, not ",
            unary_op_name(act));
  MOE_CHECK(mask.p >= 0.f && mask.p < 1.f, op, ": probability ", mask.p, " is not in [0, 1) (input ", x.shape(), ")");
  check_same_device(op, x, bias);
  check_dtype(op, "bias", bias, x.dtype());
  MOE_CHECK(bias.shape().ndim() == 1 && x.shape().ndim() >= 1 && x.shape().last() == bias.numel() && bias.numel() > 0,
            op, ": bias ", bias.shape(), " does not match input ", x.shape());
}
void check_like(const char* op, const char* what, const Tensor& x, const Tensor& t, const Shape& shape) {
  check_same_device(op, x, t);
  check_shape(op, what, t, shape);
  check_dtype(op, what, t, x.dtype());
}
}  // namespace

void bias_act_dropout_forward(const Tensor& x, const Tensor& bias, UnaryOp act, DropoutMask mask, Tensor& y) {
  check_args("bias_act_dropout", x, bias, act, mask);
  check_like("bias_act_dropout", "output", x, y, x.shape());
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, bias_act_dropout_forward, x, bias, act, mask, y);
}

void bias_act_dropout_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, UnaryOp act, DropoutMask mask,
                               Tensor* dx, Tensor* dbias) {
  const char* op = "bias_act_dropout backward";
  check_args(op, x, bias, act, mask);
  check_like(op, "output gradient", x, dy, x.shape());
  if (dx) check_like(op, "input gradient", x, *dx, x.shape());
  if (dbias) check_like(op, "bias gradient", x, *dbias, bias.shape());
  if (x.numel() == 0 || (!dx && !dbias)) return;
  MOE_DISPATCH(x, bias_act_dropout_backward, x, bias, dy, act, mask, dx, dbias);
}

}  // namespace moe
