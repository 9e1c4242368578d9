// The LSTM cell and layer (lib/layers/lstm.h): a hand-computed step, finite-difference gradients
// of the cell and of the whole sequence (with and without projection), a sequence equal to single
// steps carried through the state, and error messages.
#include "layers/lstm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/shape_ops.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
double sig(double x) { return 1 / (1 + std::exp(-x)); }
Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector(v, s, Device::cpu(), DType::f64);
}
}  // namespace

TEST_CASE("lstm: one cell step by hand", "[models][lstm]") {
  // H = 1, gate order i, f, o, g.
  const std::vector<double> gx = {0.5, -0.3, 0.2, 0.1}, wh = {0.1, 0.2, 0.3, 0.4};
  const double h0 = 0.4, c0 = -0.7;
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  LstmState st{g.input(f64({h0}, Shape{1, 1})), g.input(f64({c0}, Shape{1, 1}))};
  LstmState out = lstm_cell(g.input(f64(gx, Shape{1, 4})), st, g.input(f64(wh, Shape{1, 4})), Expr());
  double z[4];
  for (int k = 0; k < 4; ++k) z[k] = gx[k] + h0 * wh[k];
  const double c = sig(z[1]) * c0 + sig(z[0]) * std::tanh(z[3]);
  const double h = sig(z[2]) * std::tanh(c);
  CHECK(out.c.val().item() == Approx(c).epsilon(1e-12));
  CHECK(out.h.val().item() == Approx(h).epsilon(1e-12));
  // From a zero state the forget gate and recurrent weights do not matter.
  LstmState first = lstm_cell(g.input(f64(gx, Shape{1, 4})), LstmState{}, g.input(f64(wh, Shape{1, 4})), Expr());
  CHECK(first.c.val().item() == Approx(sig(0.5) * std::tanh(0.1)).epsilon(1e-12));
}

TEST_CASE("lstm: cell gradients match finite differences", "[models][lstm][gradcheck]") {
  // B = 2, H = 3, projection 2.
  std::vector<Tensor> in = {test::random_tensor({2, 12}, 1), test::random_tensor({2, 2}, 2),
                            test::random_tensor({2, 3}, 3), test::random_tensor({2, 12}, 4),
                            test::random_tensor({3, 2}, 5)};
  const double err = test::gradcheck(in, [](Graph&, const std::vector<Expr>& x) {
    LstmState s = lstm_cell(x[0], LstmState{x[1], x[2]}, x[3], x[4]);
    return concat({s.h, s.c}, 1);
  });
  CHECK(err < 1e-6);
}

TEST_CASE("lstm: sequence gradients match finite differences", "[models][lstm][gradcheck]") {
  SECTION("no projection, T = 3") {
    std::vector<Tensor> in = {test::random_tensor({2, 3, 2}, 6), test::random_tensor({2, 8}, 7),
                              test::random_tensor({8}, 8), test::random_tensor({2, 8}, 9)};
    CHECK(test::gradcheck(in, [](Graph&, const std::vector<Expr>& x) {
            return lstm_sequence(x[0], x[1], x[2], x[3], Expr());
          }) < 1e-6);
  }
  SECTION("projection 2 of 3 units, T = 4, B = 1") {
    std::vector<Tensor> in = {test::random_tensor({1, 4, 3}, 10), test::random_tensor({3, 12}, 11),
                              test::random_tensor({12}, 12), test::random_tensor({2, 12}, 13),
                              test::random_tensor({3, 2}, 14)};
    CHECK(test::gradcheck(in, [](Graph&, const std::vector<Expr>& x) {
            return lstm_sequence(x[0], x[1], x[2], x[3], x[4]);
          }) < 1e-6);
  }
}

TEST_CASE("lstm: a sequence equals its steps carried through the state", "[models][lstm]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr x = g.input(test::random_tensor({3, 5, 4}, 20));
  Expr wx = g.input(test::random_tensor({4, 12}, 21)), bias = g.input(test::random_tensor({12}, 22));
  Expr wh = g.input(test::random_tensor({3, 12}, 23));
  const auto full = lstm_sequence(x, wx, bias, wh, Expr()).val().to_vector<double>();  // [3, 5, 3]
  LstmState st;
  for (int64_t t = 0; t < 5; ++t) {
    const auto step = lstm_sequence(slice(x, 1, t, 1), wx, bias, wh, Expr(), &st).val().to_vector<double>();
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 3; ++j) CHECK(step[b * 3 + j] == Approx(full[(b * 5 + t) * 3 + j]).epsilon(1e-12));
  }
}

TEST_CASE("lstm: layer parameters and error messages", "[models][lstm]") {
  ParameterStore store(Device::cpu(), 1);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g, "rnn");
  Expr x = g.input(Tensor::zeros(Shape{2, 7, 5}, DType::f32, Device::cpu()));
  Expr y = lstm_layer(b, x, LstmSpec{5, 6, 4});
  CHECK(y.shape() == Shape{2, 7, 4});
  CHECK(store.value("rnn.wh").shape() == Shape{4, 24});
  const auto bias = store.value("rnn.b").to_vector<float>();
  CHECK(bias[0] == 0.f);
  CHECK(bias[6] == 1.f);  // forget gate
  CHECK(bias[12] == 0.f);
  CHECK_THROWS_WITH(lstm_layer(b, x, LstmSpec{4, 6, 0}), Catch::Contains("rnn.wx") && Catch::Contains("[2,7,5]"));
  CHECK_THROWS_WITH(
      lstm_cell(g.input(Tensor::zeros(Shape{2, 7}, DType::f32, Device::cpu())), LstmState{}, Expr(), Expr()),
      Catch::Contains("lstm_cell"));
}
