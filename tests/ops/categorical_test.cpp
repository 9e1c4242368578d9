// Categorical sampling (lib/ops/categorical.h): degenerate rows drawn exactly, every draw inside its
// inverse-CDF interval, frequencies matching the weights, reproducible (seed, stream) keys, f32 and
// f64 agreement, shapes, no gradient, and errors.
#include "graph/expr/categorical.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/categorical.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
std::vector<int32_t> draw(const std::vector<double>& p, const Shape& s, uint64_t seed, uint64_t stream,
                          DType dtype = DType::f32) {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  return categorical_sample(g.input(Tensor::from_vector(p, s, Device::cpu(), dtype)), seed, stream)
      .val()
      .to_vector<int32_t>();
}
}  // namespace

TEST_CASE("categorical_sample: degenerate rows", "[ops][categorical]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // One positive weight wins whatever u is; zero, negative and NaN weights are never drawn; no
  // positive weight gives 0; a single category gives 0.
  const std::vector<double> p = {0, 1, 0, 0, 0, 5, 0, 0, 0, -1, 0, 2, nan, 3, 0};
  for (uint64_t stream : {1, 2, 3, 4, 5}) CHECK(draw(p, Shape{5, 3}, 7, stream) == std::vector<int32_t>{1, 2, 0, 2, 1});
  CHECK(draw({3, 0.5}, Shape{2, 1}, 1, 1) == std::vector<int32_t>{0, 0});
}

TEST_CASE("categorical_sample: each draw lies in its inverse-CDF interval", "[ops][categorical]") {
  const int64_t rows = 257, n = 6;
  const Tensor p = test::random_tensor(Shape{rows, n}, 5, 0, 1);
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    const std::vector<double> v =
        Tensor::from_vector(p.to_vector<double>(), p.shape(), Device::cpu(), dt).to_vector<double>();
    const auto got = draw(v, p.shape(), 11, 22, dt);
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;
      for (int64_t e = 0; e < n; ++e) total += v[r * n + e];
      const double target = philox_uniform(11, 22, static_cast<uint64_t>(r)) * total;
      double before = 0;
      for (int64_t e = 0; e < got[r]; ++e) before += v[r * n + e];
      CHECK(before <= target * (1 + 1e-6));
      CHECK(before + v[r * n + got[r]] >= target * (1 - 1e-6));
    }
  }
}

TEST_CASE("categorical_sample: frequencies follow the (unnormalised) weights", "[ops][categorical]") {
  const int64_t rows = 40000;
  std::vector<double> p;
  for (int64_t r = 0; r < rows; ++r) p.insert(p.end(), {1, 2, 3, 4, 0});
  const auto got = draw(p, Shape{rows, 5}, 3, 9);
  std::vector<double> freq(5, 0);
  for (int32_t e : got) freq[static_cast<size_t>(e)] += 1.0 / rows;
  for (int e = 0; e < 4; ++e) CHECK(freq[static_cast<size_t>(e)] == Approx((e + 1) / 10.0).margin(0.01));
  CHECK(freq[4] == 0.0);
}

TEST_CASE("categorical_sample: keys, dtypes, shapes and gradients", "[ops][categorical]") {
  // Exactly representable weights: f32 and f64 sums agree, so the draws do.
  std::vector<double> p;
  for (int i = 0; i < 300; ++i) p.insert(p.end(), {0.25, 0.125, 0.5, 0.125});
  const auto a = draw(p, Shape{3, 100, 4}, 5, 6), b = draw(p, Shape{3, 100, 4}, 5, 6, DType::f64);
  CHECK(a == b);
  CHECK(a == draw(p, Shape{300, 4}, 5, 6));  // the row index keys the draw, not the shape
  CHECK(a != draw(p, Shape{300, 4}, 5, 7));  // another stream
  CHECK(a != draw(p, Shape{300, 4}, 6, 6));  // another seed
  Graph g(Device::cpu());
  Expr probs = g.input(Tensor::from_vector(p, Shape{3, 100, 4}), true);
  Expr s = categorical_sample(probs, 1, 2);
  CHECK(s.shape() == Shape({3, 100, 1}));
  CHECK(s.dtype() == DType::i32);
  CHECK_FALSE(s->requires_grad);
  Graph e(Device::cpu(), nullptr, GraphOptions{.training = false});
  CHECK_THROWS_WITH(categorical_sample(e.input(Tensor::zeros(Shape{2, 0}, DType::f32, Device::cpu())), 1, 1),
                    Catch::Contains("categorical_sample") && Catch::Contains("[2,0]"));
  CHECK_THROWS_WITH(categorical_sample(e.input(Tensor::zeros(Shape{2, 3}, DType::i32, Device::cpu())), 1, 1),
                    Catch::Contains("categorical_sample") && Catch::Contains("i32"));
  Tensor out = Tensor::zeros(Shape{2, 3}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(categorical_sample(Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()), out, 1, 1),
                    Catch::Contains("output") && Catch::Contains("[2,1]"));
}
