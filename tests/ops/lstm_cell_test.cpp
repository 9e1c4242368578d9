// The fused LSTM cell ops (lib/ops/lstm_cell.h): hand-computed values, equality with the same cell
// written with split / sigmoid / tanh / mul graph ops, finite-difference gradients in f64 (with and
// without a previous state, only some inputs taking gradients), the CPU's f32 cell (sigmoid_fast and
// tanh_fast of ops/cpu_math.h) against its f64 one, edge shapes and error messages.
#include "graph/expr/lstm_cell.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/unary.h"
#include "ops/cpu_math.h"
#include "ops/lstm_cell.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
double sig(double x) { return 1 / (1 + std::exp(-x)); }

/// The cell from separate graph ops: (c, h).
std::pair<Expr, Expr> composed(const Expr& gates, const Expr& c_prev) {
  const int64_t H = gates.shape()[1] / 4;
  auto p = split(gates, 1, {H, H, H, H});
  Expr c = mul(sigmoid(p[0]), tanh(p[3]));
  if (c_prev.defined()) c = add(c, mul(sigmoid(p[1]), c_prev));
  return {c, mul(sigmoid(p[2]), tanh(c))};
}
}  // namespace

TEST_CASE("lstm_cell: hand-computed values", "[ops][lstm_cell]") {
  // B = 1, H = 2: gates [i0 i1 f0 f1 o0 o1 g0 g1].
  const std::vector<float> g = {0.5f, -1.f, 2.f, 0.f, -0.5f, 1.f, 0.3f, -2.f}, cp = {0.7f, -0.4f};
  Tensor gates = Tensor::from_vector(g, Shape{1, 8}), c_prev = Tensor::from_vector(cp, Shape{1, 2});
  Tensor c = Tensor::empty(Shape{1, 2}, DType::f32, Device::cpu()),
         h = Tensor::empty(Shape{1, 2}, DType::f32, Device::cpu());
  lstm_cell_state_forward(gates, c_prev, c);
  lstm_cell_output_forward(gates, c, h);
  const auto vc = c.to_vector<float>(), vh = h.to_vector<float>();
  for (int j = 0; j < 2; ++j) {
    const double want_c = sig(g[2 + j]) * cp[j] + sig(g[j]) * std::tanh(g[6 + j]);
    CHECK(vc[j] == Approx(want_c).epsilon(1e-6));
    CHECK(vh[j] == Approx(sig(g[4 + j]) * std::tanh(want_c)).epsilon(1e-6));
  }
  // No previous state: c = sig(i) tanh(g).
  lstm_cell_state_forward(gates, Tensor(), c);
  CHECK(c.to_vector<float>()[1] == Approx(sig(-1.0) * std::tanh(-2.0)).epsilon(1e-6));
}

TEST_CASE("lstm_cell: equals the composed graph ops", "[ops][lstm_cell]") {
  for (int64_t H : {1, 33}) {
    for (bool with_prev : {false, true}) {
      INFO("H " << H << " prev " << with_prev);
      Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
      Expr gates = g.input(test::random_tensor({3, 4 * H}, 1, -3, 3));
      Expr cp = with_prev ? g.input(test::random_tensor({3, H}, 2, -2, 2)) : Expr();
      Expr c = lstm_cell_state(gates, cp);
      Expr h = lstm_cell_output(gates, c);
      auto [rc, rh] = composed(gates, cp);
      const auto a = c.val().to_vector<double>(), b = rc.val().to_vector<double>();
      const auto x = h.val().to_vector<double>(), y = rh.val().to_vector<double>();
      for (size_t k = 0; k < a.size(); ++k) {
        CHECK(a[k] == Approx(b[k]).epsilon(1e-12));
        CHECK(x[k] == Approx(y[k]).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("lstm_cell: gradients match finite differences", "[ops][lstm_cell][gradcheck]") {
  auto both = [](Graph&, const std::vector<Expr>& x) {
    Expr c = lstm_cell_state(x[0], x.size() > 1 ? x[1] : Expr());
    return concat({c, lstm_cell_output(x[0], c)}, 1);
  };
  CHECK(test::gradcheck({test::random_tensor({2, 12}, 3, -2, 2), test::random_tensor({2, 3}, 4)}, both) < 1e-6);
  CHECK(test::gradcheck({test::random_tensor({1, 4}, 5, -2, 2)}, both) < 1e-6);
  CHECK(test::gradcheck({test::random_tensor({3, 20}, 6, -2, 2), test::random_tensor({3, 5}, 7)}, both, 1e-6, {1}) <
        1e-6);
  // The output op alone, c as an independent input.
  CHECK(test::gradcheck({test::random_tensor({2, 8}, 8, -2, 2), test::random_tensor({2, 2}, 9, -2, 2)},
                        [](Graph&, const std::vector<Expr>& x) { return lstm_cell_output(x[0], x[1]); }) < 1e-6);
}

TEST_CASE("lstm_cell: sigmoid_fast and tanh_fast are within a few ulp", "[ops][lstm_cell]") {
  double worst_sig = 0, worst_tanh = 0;
  for (double x = -30; x <= 30; x += 1e-3) {
    const float f = float(x);
    const double s = sig(f), t = std::tanh(double(f));
    worst_sig = std::max(worst_sig, std::fabs(cpu::sigmoid_fast(f) - s) / s);
    if (t != 0) worst_tanh = std::max(worst_tanh, std::fabs(cpu::tanh_fast(f) - t) / std::fabs(t));
  }
  INFO("sigmoid " << worst_sig << ", tanh " << worst_tanh << " (relative)");
  CHECK(worst_sig < 3e-7);  // 2.5 ulp
  CHECK(worst_tanh < 3e-7);
  for (float tiny : {1e-30f, -1e-8f, 3e-5f}) CHECK(cpu::tanh_fast(tiny) == Approx(std::tanh(tiny)).epsilon(1e-7));
  CHECK(cpu::tanh_fast(INFINITY) == 1.f);
  CHECK(cpu::tanh_fast(-50.f) == -1.f);
  CHECK(cpu::sigmoid_fast(INFINITY) == 1.f);
  CHECK(cpu::sigmoid_fast(-INFINITY) < 1e-30f);
  CHECK(std::isnan(cpu::tanh_fast(NAN)));
}

TEST_CASE("lstm_cell: the f32 cell equals the f64 one, forward and backward", "[ops][lstm_cell]") {
  // Rows over the threads, H not a multiple of the vector width, gates across both tanh branches.
  const int64_t B = 9, H = 37;
  for (bool with_prev : {false, true}) {
    INFO("prev " << with_prev);
    auto run = [&](DType dt) {
      Tensor gates = test::random_tensor({B, 4 * H}, 11, -12, 12, dt);
      Tensor cp = with_prev ? test::random_tensor({B, H}, 12, -3, 3, dt) : Tensor();
      Tensor dc = test::random_tensor({B, H}, 13, -1, 1, dt), dh = test::random_tensor({B, H}, 14, -1, 1, dt);
      Tensor c = Tensor::empty(Shape{B, H}, dt, Device::cpu()), h = Tensor::empty(Shape{B, H}, dt, Device::cpu());
      Tensor dgates = Tensor::zeros(Shape{B, 4 * H}, dt, Device::cpu()), dcp;
      if (with_prev) dcp = Tensor::zeros(Shape{B, H}, dt, Device::cpu());
      lstm_cell_state_forward(gates, cp, c);
      lstm_cell_output_forward(gates, c, h);
      lstm_cell_output_backward(gates, c, dh, dgates, dc);  // dc += the output's share
      lstm_cell_state_backward(gates, cp, dc, dgates, dcp);
      std::vector<std::vector<double>> out = {c.to_vector<double>(), h.to_vector<double>(), dgates.to_vector<double>()};
      if (with_prev) out.push_back(dcp.to_vector<double>());
      return out;
    };
    const auto f32 = run(DType::f32), f64 = run(DType::f64);
    for (size_t t = 0; t < f32.size(); ++t)
      for (size_t k = 0; k < f32[t].size(); ++k) CHECK(f32[t][k] == Approx(f64[t][k]).margin(2e-6).epsilon(2e-6));
  }
}

TEST_CASE("lstm_cell: edge shapes and errors", "[ops][lstm_cell]") {
  Tensor empty_gates = Tensor::zeros(Shape{0, 8}, DType::f32, Device::cpu());
  Tensor empty_c = Tensor::empty(Shape{0, 2}, DType::f32, Device::cpu());
  lstm_cell_state_forward(empty_gates, Tensor(), empty_c);
  CHECK(empty_c.numel() == 0);
  Tensor gates = Tensor::zeros(Shape{2, 6}, DType::f32, Device::cpu());
  Tensor c = Tensor::empty(Shape{2, 1}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_state_forward(gates, Tensor(), c),
                    Catch::Contains("lstm_cell_state") && Catch::Contains("[2,6]"));
  Tensor g8 = Tensor::zeros(Shape{2, 8}, DType::f32, Device::cpu());
  Tensor wrong = Tensor::empty(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_output_forward(g8, wrong, wrong),
                    Catch::Contains("lstm_cell_output") && Catch::Contains("[2,3]") && Catch::Contains("[2,2]"));
  Tensor c64 = Tensor::empty(Shape{2, 2}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_state_forward(g8, Tensor(), c64), Catch::Contains("f64"));
  Graph g(Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_state(g.input(g8), g.input(wrong)), Catch::Contains("c_prev"));
  // The gate gradient must have the gates' dtype (the CUDA kernels write it as the gates' type).
  Tensor c2 = Tensor::zeros(Shape{2, 2}, DType::f32, Device::cpu()), none;
  Tensor dg64 = Tensor::zeros(Shape{2, 8}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_state_backward(g8, c2, c2, dg64, none),
                    Catch::Contains("lstm_cell_state backward") && Catch::Contains("dgates") && Catch::Contains("f64"));
  CHECK_THROWS_WITH(lstm_cell_output_backward(g8, c2, c2, dg64, none),
                    Catch::Contains("lstm_cell_output backward") && Catch::Contains("dgates"));
  Tensor dg = Tensor::zeros(Shape{2, 8}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(lstm_cell_output_backward(g8, c2, none, dg, none), Catch::Contains("dh"));
}
