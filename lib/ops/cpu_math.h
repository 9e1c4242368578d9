// Helpers of the CPU kernels that the compiler vectorises (no -ffast-math needed):
// exp_fast(x) for f32, Cephes' expf (x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-6 polynomial,
// 2^n by the exponent bits): within 2 ulp of std::exp on [-87, 88], e^-87.3 below that (callers
// mask -inf themselves: masked_exp); exp_of() picks it for f32 and std::exp for f64; sigmoid_fast and tanh_fast over
// it. kLanes: the number of independent partial sums a row reduction keeps (interleaved lanes, so the adds vectorise):
// row_max, row_sum. Covered by tests/ops/softmax_test.cpp (exp_fast against std::exp) and the softmax / layer-norm
// tests.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace moe::cpu {

constexpr int kLanes = 8;

inline float exp_fast(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  const float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round(x / ln 2)
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;           // x - n ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.f;
  return e * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

inline float exp_of(float x) { return exp_fast(x); }
inline double exp_of(double x) { return std::exp(x); }

/// e^(v - m) by exp_of, 0 where v is -inf (a masked entry, which exp_fast alone would take to e^-87.3).
template <class T>
T masked_exp(T v, T m) {
  return v == -std::numeric_limits<T>::infinity() ? T(0) : exp_of(v - m);
}

/// 1 / (1 + e^-x) by exp_fast, x clamped to [-80, 80] (no subnormal quotient; sig(-80) is 1.8e-35).
inline float sigmoid_fast(float x) {
  x = x < -80.f ? -80.f : x;
  x = x > 80.f ? 80.f : x;
  return 1.f / (1.f + exp_fast(-x));
}

/// tanh in f32 as Cephes' tanhf: |x| < 0.625 by an odd polynomial (no cancellation near 0), above by
/// 1 - 2 / (e^2|x| + 1) with |x| clamped at 10 (tanh 10 rounds to 1); both computed, one selected, so loops
/// over it vectorise. Within a few ulp of std::tanh (tests/ops/lstm_cell_test.cpp).
inline float tanh_fast(float x) {
  const float a = std::min(std::fabs(x), 10.f), s = x * x;
  const float small =
      ((((-5.70498872745e-3f * s + 2.06390887954e-2f) * s - 5.37397155531e-2f) * s + 1.33314422036e-1f) * s -
       3.33332819422e-1f) *
          s * x +
      x;
  const float big = std::copysign(1.f - 2.f / (exp_fast(a + a) + 1.f), x);
  return a < 0.625f ? small : big;
}

/// The largest of x[0..n) (-inf when n is 0), in kLanes partial maxima.
template <class T>
T row_max(const T* x, int64_t n) {
  T mx[kLanes];
  std::fill(mx, mx + kLanes, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) mx[l] = std::max(mx[l], x[j + l]);
  for (; j < n; ++j) mx[0] = std::max(mx[0], x[j]);
  return *std::max_element(mx, mx + kLanes);
}

/// The sum over j < n of f(x[j]): kLanes partial sums in T over blocks of 64, the blocks added in f64 (a
/// sequential f32 sum of 32,000 terms is off by ~3e-5). Entry j goes to lane j % kLanes, the tail's too, so
/// entries with f(x) = 0 appended to x leave the sum's bits as they are (attention's padded keys).
template <class T, class F>
double row_sum(const T* x, int64_t n, F f) {
  double s = 0;
  for (int64_t b = 0; b < n; b += 64) {
    const int64_t e = std::min(n, b + 64);
    T part[kLanes] = {};
    int64_t k = b;
    for (; k + kLanes <= e; k += kLanes)
      for (int l = 0; l < kLanes; ++l) part[l] += f(x[k + l]);
    for (int l = 0; k + l < e; ++l) part[l] += f(x[k + l]);
    for (int l = 0; l < kLanes; ++l) s += part[l];
  }
  return s;
}

}  // namespace moe::cpu
