// CPU reference of dropout (see dropout.h): f32 and f64, the mask drawn per element index.
// Covered by tests/ops/dropout_test.cpp.
#include "ops/dropout.h"

#include <algorithm>

#include "common/cpu_threads.h"
#include "ops/dispatch.h"

namespace moe {

namespace cpu {
namespace {
template <class T, bool Backward>
void run(const T* src, T* dst, int64_t n, float p, uint64_t seed, uint64_t rng_stream) {
  const T scale = T(1) / (T(1) - static_cast<T>(p));
  parallel_for(n, kElementsPerThread, [&](int64_t lo, int64_t hi) {  // the mask depends on i only
    T k[kDropoutChunk];
    for (int64_t c = lo; c < hi; c += kDropoutChunk) {
      const int64_t w = std::min(kDropoutChunk, hi - c);
      dropout_factors<T>(seed, rng_stream, p, scale, static_cast<uint64_t>(c), w, k);
      for (int64_t j = 0; j < w; ++j) {
        const T v = k[j] != T(0) ? src[c + j] * k[j] : T(0);
        if constexpr (Backward)
          dst[c + j] += v;
        else
          dst[c + j] = v;
      }
    }
  });
}
}  // namespace

void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream) {
  check_cpu_float("dropout", x);
  if (x.dtype() == DType::f64)
    run<double, false>(x.data<double>(), y.data<double>(), x.numel(), p, seed, rng_stream);
  else
    run<float, false>(x.data<float>(), y.data<float>(), x.numel(), p, seed, rng_stream);
}

void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream) {
  check_cpu_float("dropout backward", dy);
  if (dy.dtype() == DType::f64)
    run<double, true>(dy.data<double>(), dx.data<double>(), dy.numel(), p, seed, rng_stream);
  else
    run<float, true>(dy.data<float>(), dx.data<float>(), dy.numel(), p, seed, rng_stream);
}
}  // namespace cpu

namespace {
void check_args(const char* op, const Tensor& a, const Tensor& b, float p) {
  MOE_CHECK(p >= 0.f && p < 1.f, op, ": probability ", p, " is not in [0, 1) (shape ", a.shape(), ")");
  check_same_device(op, a, b);
  check_shape(op, "output", b, a.shape());
  check_dtype(op, "output", b, a.dtype());
}
}  // namespace

void dropout_forward(const Tensor& x, Tensor& y, float p, uint64_t seed, uint64_t rng_stream) {
  check_args("dropout", x, y, p);
  if (x.numel() == 0) return;
  MOE_DISPATCH(x, dropout_forward, x, y, p, seed, rng_stream);
}

void dropout_backward(const Tensor& dy, Tensor& dx, float p, uint64_t seed, uint64_t rng_stream) {
  check_args("dropout backward", dy, dx, p);
  if (dy.numel() == 0) return;
  MOE_DISPATCH(dy, dropout_backward, dy, dx, p, seed, rng_stream);
}

}  // namespace moe
