// ema_update (lib/ops/ema.h): hand-computed values, N updates against the closed form
// ema_N = d^N e_0 + (1 - d) sum_k d^(N-k) p_k, decay 0 (ema = value), a view of a larger buffer
// (only its elements move), and the argument errors.
#include "ops/ema.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace moe;

namespace {
Tensor vec(std::vector<float> v) { return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}); }
}  // namespace

TEST_CASE("ema_update: hand-computed values and the closed form", "[ops][ema]") {
  Tensor e = vec({1.f, -2.f, 0.f});
  ema_update(e, vec({3.f, 2.f, 10.f}), 0.75f);  // 0.75 e + 0.25 p
  CHECK(e.to_vector<float>() == std::vector<float>{1.5f, -1.f, 2.5f});
  ema_update(e, vec({7.f, 7.f, 7.f}), 0.f);
  CHECK(e.to_vector<float>() == std::vector<float>{7.f, 7.f, 7.f});

  const double d = 0.9;
  Tensor ema = vec({0.5f, -1.f});
  double closed[2] = {0.5, -1.0};
  const int kSteps = 25;
  for (int k = 1; k <= kSteps; ++k) {
    const std::vector<float> p = {std::sin(0.3f * k), 0.1f * k};
    ema_update(ema, vec(p), static_cast<float>(d));
    for (int i = 0; i < 2; ++i) closed[i] = d * closed[i] + (1 - d) * p[i];
  }
  // The same sum written out: d^N e_0 + (1 - d) sum_k d^(N-k) p_k.
  double sum = std::pow(d, kSteps) * 0.5;
  for (int k = 1; k <= kSteps; ++k) sum += (1 - d) * std::pow(d, kSteps - k) * std::sin(0.3f * k);
  CHECK(sum == Approx(closed[0]).epsilon(1e-12));
  const auto got = ema.to_vector<float>();
  CHECK(got[0] == Approx(closed[0]).epsilon(1e-5));
  CHECK(got[1] == Approx(closed[1]).epsilon(1e-5));
}

TEST_CASE("ema_update on a view moves only its elements; errors", "[ops][ema]") {
  Tensor e = vec({1.f, 1.f, 1.f, 1.f, 1.f});
  ema_update(e.flat_range(1, 3), vec({3.f, 3.f, 3.f}), 0.5f);
  CHECK(e.to_vector<float>() == std::vector<float>{1.f, 2.f, 2.f, 2.f, 1.f});
  CHECK_THROWS_WITH(ema_update(e, vec({1.f}), 0.5f), Catch::Contains("ema_update") && Catch::Contains("value"));
  CHECK_THROWS_WITH(ema_update(e, vec({1, 1, 1, 1, 1}), 1.f), Catch::Contains("decay must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(ema_update(e, vec({1, 1, 1, 1, 1}), -0.1f), Catch::Contains("decay"));
  CHECK_THROWS_WITH(ema_update(e, Tensor::zeros(Shape{5}, DType::f64, Device::cpu()), 0.5f),
                    Catch::Contains("ema_update") && Catch::Contains("f64"));
}
