// Batch norm: hand-computed training values and running-statistics update (unbiased variance,
// momentum), eval mode with running statistics, finite-difference gradients (f64) in both modes,
// and errors (one row in training, shapes, missing running statistics).
#include "graph/expr/batch_norm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor f64(const std::vector<double>& v, const Shape& s) { return Tensor::from_vector(v, s); }
}  // namespace

TEST_CASE("batch_norm: training values and running statistics", "[ops][batch_norm]") {
  Tensor x = f64({1, 10, 3, 10, 5, 40}, Shape{3, 2});
  Tensor rm = f64({0, 1}, Shape{2}), rv = f64({1, 2}, Shape{2});
  Tensor gamma = f64({2, 1}, Shape{2}), beta = f64({0.5, 0}, Shape{2});
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  const auto y =
      batch_norm(g.input(x), g.input(gamma), g.input(beta), rm, rv, true, 0.1f, 1e-5f).val().to_vector<double>();
  const double rs0 = 1 / std::sqrt(8.0 / 3 + 1e-5), rs1 = 1 / std::sqrt(200.0 + 1e-5);  // col 1: mean 20, var 200
  CHECK(y[0] == Approx(-2 * rs0 * 2 + 0.5));
  CHECK(y[2] == Approx(0.5));
  CHECK(y[4] == Approx(2 * rs0 * 2 + 0.5));
  CHECK(y[1] == Approx(-10 * rs1));
  CHECK(y[5] == Approx(20 * rs1));
  const auto m = rm.to_vector<double>(), v = rv.to_vector<double>();
  CHECK(m[0] == Approx(0.3));
  CHECK(m[1] == Approx(0.9 * 1 + 0.1 * 20));
  CHECK(v[0] == Approx(0.9 * 1 + 0.1 * 4));  // unbiased: 8/2
  CHECK(v[1] == Approx(0.9 * 2 + 0.1 * 300));
}

TEST_CASE("batch_norm: eval mode uses the running statistics", "[ops][batch_norm]") {
  Tensor x = f64({1, 2, 3, 4}, Shape{2, 2});
  Tensor rm = f64({1, -1}, Shape{2}), rv = f64({4, 0.25}, Shape{2});
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  const auto y = batch_norm(g.input(x), {}, {}, rm, rv, false, 0.1f, 0.f).val().to_vector<double>();
  CHECK(y == std::vector<double>{0, 6, 1, 10});
  CHECK(rm.to_vector<double>() == std::vector<double>{1, -1});  // untouched in eval
  // One row is fine in eval mode.
  Tensor one = f64({3, 0}, Shape{1, 2});
  CHECK(batch_norm(g.input(one), {}, {}, rm, rv, false, 0.1f, 0.f).val().to_vector<double>() ==
        std::vector<double>{1, 2});
}

TEST_CASE("batch_norm: finite-difference gradients", "[ops][batch_norm][grad]") {
  for (const Shape& shape : {Shape{2, 1}, Shape{5, 3}, Shape{7, 33}, Shape{2, 3, 4}}) {
    const int64_t C = shape.last();
    Tensor x = test::random_tensor(shape, 31, -2, 2);
    Tensor gamma = test::random_tensor(Shape{C}, 32, 0.5, 1.5), beta = test::random_tensor(Shape{C}, 33);
    Tensor rm = Tensor::zeros(Shape{C}, DType::f64, Device::cpu());
    Tensor rv = test::random_tensor(Shape{C}, 34, 0.5, 2);
    for (bool training : {true, false}) {
      INFO(shape << " training " << training);
      CHECK(test::gradcheck({x, gamma, beta}, [&](Graph&, const std::vector<Expr>& in) {
              return batch_norm(in[0], in[1], in[2], rm, rv, training, 0.1f, 1e-3f);
            }) < 1e-6);
      CHECK(test::gradcheck({x}, [&](Graph&, const std::vector<Expr>& in) {
              return batch_norm(in[0], {}, {}, training ? Tensor() : rm, training ? Tensor() : rv, training);
            }) < 1e-6);
    }
  }
}

TEST_CASE("batch_norm: errors name the op and the shapes", "[ops][batch_norm][errors]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Tensor rm = Tensor::zeros(Shape{3}, DType::f32, Device::cpu()), rv = rm.clone();
  Expr one = g.input(Tensor::zeros(Shape{1, 3}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(batch_norm(one, {}, {}, rm, rv, true),
                    Catch::Contains("batch_norm") && Catch::Contains("more than one row") && Catch::Contains("[1,3]"));
  Expr x = g.input(Tensor::zeros(Shape{4, 3}, DType::f32, Device::cpu()));
  Tensor bad = Tensor::zeros(Shape{2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(batch_norm(x, {}, {}, bad, rv, true),
                    Catch::Contains("running_mean") && Catch::Contains("[2]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(batch_norm(x, {}, {}, Tensor(), Tensor(), false), Catch::Contains("eval mode needs running"));
  CHECK_THROWS_WITH(batch_norm(x, g.input(bad), {}, rm, rv, true), Catch::Contains("gamma") && Catch::Contains("[2]"));
}

TEST_CASE("batch_norm: running statistics kept as store state persist across graphs", "[ops][batch_norm][state]") {
  // f64 input with the store's f32 statistics: training updates them in place, eval reads them.
  ParameterStore store(Device::cpu(), 1);
  Tensor x = f64({1, 10, 3, 10, 5, 40}, Shape{3, 2});
  {
    Graph g(Device::cpu(), &store);
    Expr rm = g.state("bn.mean", Shape{2}, Init::zeros()), rv = g.state("bn.var", Shape{2}, Init::ones());
    Expr y = batch_norm(g.input(x, true), {}, {}, rm, rv, true, 0.1f, 0.f);
    g.forward();
    CHECK(y.val().to_vector<double>()[2] == Approx(0.0).margin(1e-12));
  }
  const auto m = store.value("bn.mean").to_vector<double>(), v = store.value("bn.var").to_vector<double>();
  CHECK(m[0] == Approx(0.3));
  CHECK(m[1] == Approx(2.0));
  CHECK(v[0] == Approx(0.9 + 0.4));
  CHECK(v[1] == Approx(0.9 + 30));
  Graph e(Device::cpu(), &store, GraphOptions{.training = false});
  const auto y = batch_norm(e.input(f64({0.3, 2}, Shape{1, 2})), {}, {}, e.state("bn.mean", Shape{2}, Init::zeros()),
                            e.state("bn.var", Shape{2}, Init::ones()), false, 0.1f, 0.f)
                     .val()
                     .to_vector<double>();
  CHECK(y[0] == Approx(0.0).margin(1e-7));  // (x - running mean) / sqrt(running var)
  CHECK(y[1] == Approx(0.0).margin(1e-7));
  Expr grad_leaf = e.input(Tensor::zeros(Shape{2}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(batch_norm(e.input(x), {}, {}, grad_leaf, Expr(), false),
                    Catch::Contains("running statistics leaves"));
}
