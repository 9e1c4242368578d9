// Helpers of the CPU kernels that the compiler vectorises (no -ffast-math needed):
// exp_fast(x) for f32, Cephes' expf (x = n ln2 + r, |r| <= ln2 / 2, e^r by a degree-6 polynomial,
// 2^n by the exponent bits): within 2 ulp of std::exp on [-87, 88], e^-87.3 below that (callers
// mask -inf themselves); exp_of() picks it for f32 and std::exp for f64. kLanes: the number of
// independent partial sums a row reduction keeps (interleaved lanes, so the adds vectorise).
// Covered by tests/ops/softmax_test.cpp (exp_fast against std::exp) and the softmax / layer-norm tests.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

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

}  // namespace moe::cpu
