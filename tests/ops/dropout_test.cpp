// Dropout: the mask follows philox_uniform >= p, the kept fraction is near 1 - p, the gradient is
// mask / (1 - p) (finite differences in f64), identity in inference mode or at p = 0, and errors.
#include "graph/expr/dropout.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "ops/dropout.h"
#include "support/gradcheck.h"

using namespace moe;

TEST_CASE("dropout: values follow the Philox mask", "[ops][dropout]") {
  const int64_t n = 100003;  // not a multiple of 4
  const float p = 0.3f;
  Tensor x = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 2.f), Shape{n});
  Tensor y = Tensor::empty(x.shape(), DType::f32, Device::cpu());
  dropout_forward(x, y, p, 42, 7);
  const auto v = y.to_vector<float>();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = philox_uniform(42, 7, static_cast<uint64_t>(i)) >= p;
    REQUIRE(v[static_cast<size_t>(i)] == (keep ? 2.f * (1.f / (1.f - p)) : 0.f));
    kept += keep;
  }
  // Binomial(n, 0.7): standard deviation ~ 145 elements; allow 5 sigma.
  CHECK(std::abs(static_cast<double>(kept) / n - 0.7) < 5 * std::sqrt(0.21 / n));
  // Another stream gives another mask; the same stream the same one.
  Tensor y2 = Tensor::empty(x.shape(), DType::f32, Device::cpu());
  dropout_forward(x, y2, p, 42, 8);
  CHECK(y2.to_vector<float>() != v);
  dropout_forward(x, y2, p, 42, 7);
  CHECK(y2.to_vector<float>() == v);
}

TEST_CASE("dropout: gradient is mask / (1 - p)", "[ops][dropout][grad]") {
  // test::gradcheck evaluates in inference mode, where dropout is the identity, so the finite
  // differences run on the op itself with a fixed (seed, stream).
  for (const Shape& shape : {Shape{1}, Shape{3, 37}}) {
    INFO(shape);
    const float p = 0.4f;
    Tensor x = test::random_tensor(shape, 3);
    const std::vector<double> w = test::random_tensor(shape, 4, 0.5, 1.5).to_vector<double>();
    auto f = [&](const std::vector<double>& xv) {
      Tensor y = Tensor::empty(shape, DType::f64, Device::cpu());
      dropout_forward(Tensor::from_vector(xv, shape), y, p, 9, 11);
      return test::weighted_sum(y, w);
    };
    Tensor dx = Tensor::zeros(shape, DType::f64, Device::cpu());
    dropout_backward(Tensor::from_vector(w, shape), dx, p, 9, 11);
    const std::vector<double> analytic = dx.to_vector<double>(), base = x.to_vector<double>();
    double worst = 0;
    for (size_t k = 0; k < base.size(); ++k) {
      std::vector<double> hi = base, lo = base;
      hi[k] += 1e-6;
      lo[k] -= 1e-6;
      const double numeric = (f(hi) - f(lo)) / 2e-6;
      worst = std::max(worst, std::abs(numeric - analytic[k]) / std::max(1.0, std::abs(numeric)));
      const bool keep = philox_uniform(9, 11, k) >= p;
      CHECK(analytic[k] == Approx(keep ? w[k] / (1 - double(p)) : 0.0).epsilon(1e-6));
    }
    CHECK(worst < 1e-6);
  }
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::from_vector(std::vector<double>(50, 1.0), Shape{50}), true);
  Expr y = dropout(x, 0.5f);
  g.forward();
  g.backward_from(y, Tensor::from_vector(std::vector<double>(50, 1.0), Shape{50}));
  // With x = 1 and dy = 1, dx equals y elementwise: the same mask scaled by 1 / (1 - p).
  CHECK(x.grad().to_vector<double>() == y.val().to_vector<double>());
  int zeros = 0;
  for (double v : y.val().to_vector<double>()) {
    CHECK((v == 0.0 || v == 2.0));
    zeros += v == 0.0;
  }
  CHECK(zeros > 0);
  CHECK(zeros < 50);
}

TEST_CASE("dropout: identity in inference mode and at p = 0", "[ops][dropout]") {
  Graph inf(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr a = inf.input(test::random_tensor(Shape{4, 4}, 1));
  CHECK(dropout(a, 0.5f).val().shares_storage(a.val()));
  Graph tr(Device::cpu());
  Expr b = tr.input(test::random_tensor(Shape{4, 4}, 1), true);
  CHECK(&dropout(b, 0.f).node() == &b.node());
  CHECK(&dropout(b, 0.1f).node() != &b.node());
}

TEST_CASE("dropout: errors name the op, probability and shape", "[ops][dropout][errors]") {
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(dropout(x, 1.f), Catch::Contains("dropout") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(dropout(x, -0.1f), Catch::Contains("dropout"));
  Tensor a = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()),
         b = Tensor::zeros(Shape{3, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(dropout_forward(a, b, 0.5f, 1, 1), Catch::Contains("dropout") && Catch::Contains("[3,2]"));
}
