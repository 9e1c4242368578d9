// Layer norm: hand-computed values, the saved statistics, agreement with the composition
// (x - mean)/sqrt(var + eps)*gamma + beta computed directly, finite-difference gradients for x,
// gamma and beta (f64; with and without gamma/beta; d = 1 and d not a multiple of 32), and errors.
#include "graph/expr/layer_norm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "support/gradcheck.h"

using namespace moe;

TEST_CASE("layer_norm: hand-computed values and saved statistics", "[ops][layer_norm]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 5, 5, 5}, Shape{2, 4});
  Tensor gamma = Tensor::from_vector(std::vector<double>{1, 2, 1, 1}, Shape{4});
  Tensor beta = Tensor::from_vector(std::vector<double>{0, 0, 1, 0}, Shape{4});
  Tensor y = Tensor::empty(x.shape(), DType::f64, Device::cpu());
  Tensor mean = Tensor::empty(Shape{2}, DType::f64, Device::cpu()), rstd = mean.clone();
  layer_norm_forward(x, gamma, beta, y, mean, rstd, 1e-5f);
  const double rs = 1 / std::sqrt(1.25 + 1e-5);
  const auto v = y.to_vector<double>();
  CHECK(v[0] == Approx(-1.5 * rs));
  CHECK(v[1] == Approx(-0.5 * rs * 2));
  CHECK(v[2] == Approx(0.5 * rs + 1));
  CHECK(v[3] == Approx(1.5 * rs));
  CHECK(v[4] == 0);  // constant row: xhat = 0, y = beta
  CHECK(v[6] == 1);
  CHECK(mean.to_vector<double>() == std::vector<double>{2.5, 5});
  CHECK(rstd.to_vector<double>()[0] == Approx(rs));
  CHECK(rstd.to_vector<double>()[1] == Approx(1 / std::sqrt(1e-5)));
}

TEST_CASE("layer_norm: equals the direct composition (f32 and f64)", "[ops][layer_norm]") {
  const int rows = 5, d = 37;
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor x = test::random_tensor(Shape{rows, d}, 4, -3, 5, dt);
    Tensor gamma = test::random_tensor(Shape{d}, 5, 0.5, 1.5, DType::f32);  // f32 master with f64 x too
    Tensor beta = test::random_tensor(Shape{d}, 6, -1, 1, DType::f32);
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
    const auto y = layer_norm(g.input(x), g.input(gamma), g.input(beta), 1e-3f).val().to_vector<double>();
    const auto xv = x.to_vector<double>(), gv = gamma.to_vector<double>(), bv = beta.to_vector<double>();
    for (int r = 0; r < rows; ++r) {
      double mu = 0, var = 0;
      for (int j = 0; j < d; ++j) mu += xv[r * d + j] / d;
      for (int j = 0; j < d; ++j) var += (xv[r * d + j] - mu) * (xv[r * d + j] - mu) / d;
      for (int j = 0; j < d; ++j) {
        const double want = (xv[r * d + j] - mu) / std::sqrt(var + 1e-3) * gv[j] + bv[j];
        INFO(dtype_name(dt) << " " << r << "," << j);
        CHECK(y[r * d + j] == Approx(want).epsilon(dt == DType::f64 ? 1e-12 : 1e-5).margin(1e-5));
      }
    }
  }
}

TEST_CASE("layer_norm: finite-difference gradients", "[ops][layer_norm][grad]") {
  for (const Shape& shape : {Shape{1, 1}, Shape{1, 2}, Shape{3, 37}, Shape{2, 2, 5}}) {
    INFO(shape);
    const int64_t d = shape.last();
    Tensor x = test::random_tensor(shape, 12, -2, 2);
    Tensor gamma = test::random_tensor(Shape{d}, 13, 0.5, 1.5), beta = test::random_tensor(Shape{d}, 14, -1, 1);
    CHECK(test::gradcheck({x, gamma, beta}, [](Graph&, const std::vector<Expr>& in) {
            return layer_norm(in[0], in[1], in[2], 1e-3f);
          }) < 1e-6);
    CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], {}, {}, 1e-3f); }) <
          1e-6);
    CHECK(test::gradcheck({x, gamma},
                          [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], in[1], {}); }) < 1e-6);
  }
  // Only gamma/beta take gradients (x is a constant input).
  Tensor x = test::random_tensor(Shape{4, 33}, 15, -2, 2);
  Tensor gamma = test::random_tensor(Shape{33}, 16, 0.5, 1.5), beta = test::random_tensor(Shape{33}, 17);
  CHECK(test::gradcheck({x, gamma, beta},
                        [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], in[1], in[2]); }, 1e-6,
                        {1, 2}) < 1e-6);
}

TEST_CASE("layer_norm: errors name the op and the shapes", "[ops][layer_norm][errors]") {
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::zeros(Shape{2, 4}, DType::f32, Device::cpu()));
  Expr gamma = g.input(Tensor::zeros(Shape{3}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(layer_norm(x, gamma, {}), Catch::Contains("layer_norm") && Catch::Contains("gamma") &&
                                                  Catch::Contains("[3]") && Catch::Contains("[2,4]"));
  Tensor xi = Tensor::zeros(Shape{2, 4}, DType::f32, Device::cpu());
  Tensor y = xi.clone(), m = Tensor::empty(Shape{2}, DType::f32, Device::cpu()), r = m.clone();
  Tensor b64 = Tensor::zeros(Shape{4}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(layer_norm_forward(xi, {}, b64, y, m, r), Catch::Contains("beta") && Catch::Contains("f64"));
  Tensor m3 = Tensor::empty(Shape{3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(layer_norm_forward(xi, {}, {}, y, m3, r), Catch::Contains("mean") && Catch::Contains("[3]"));
}

TEST_CASE("layer_norm: no rows", "[ops][layer_norm]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Tensor x = Tensor::zeros(Shape{0, 6}, DType::f64, Device::cpu());
  CHECK(layer_norm(g.input(x), {}, {}).val().shape() == Shape{0, 6});
}
