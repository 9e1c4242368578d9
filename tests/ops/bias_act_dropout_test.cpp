// bias_act_dropout (lib/ops/bias_act_dropout.h): equal bit for bit to the unfused
// linear -> activation -> dropout in values and in every gradient (same graph seed, same streams),
// at 1 and 2 threads; finite differences in f64 with dropout on (op level, fixed mask) and off
// (graph gradcheck); inference mode leaves dropout out; argument errors.
#include "graph/expr/bias_act_dropout.h"

#include <catch2/catch.hpp>

#include "common/cpu_threads.h"
#include "graph/expr/dropout.h"
#include "graph/expr/matmul.h"
#include "graph/expr/unary.h"
#include "ops/bias_act_dropout.h"
#include "ops/dropout.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
struct Run {
  std::vector<float> y, da, dw, db;
};
/// a [2, 19, 24] @ w [24, 70] + b, then the activation and dropout p, fused or not; gradients of all three.
Run run(bool fused, UnaryOp act, float p) {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = true, .seed = 17, .step = 3});
  Expr a = g.input(test::random_tensor(Shape{2, 19, 24}, 1, -1, 1, DType::f32), true);
  Expr w = g.input(test::random_tensor(Shape{24, 70}, 2, -0.5, 0.5, DType::f32), true);
  Expr b = g.input(test::random_tensor(Shape{70}, 3, -0.5, 0.5, DType::f32), true);
  Expr y = fused ? bias_act_dropout(matmul(a, w), b, act, p) : dropout(unary(act, linear(a, w, b)), p);
  g.forward();
  g.backward_from(y, test::random_tensor(y.shape(), 4, -1, 1, DType::f32));
  return {y.val().to_vector<float>(), a.grad().to_vector<float>(), w.grad().to_vector<float>(),
          b.grad().to_vector<float>()};
}
}  // namespace

TEST_CASE("bias_act_dropout: equals linear, activation, dropout bit for bit", "[ops][bias_act_dropout]") {
  const int saved = cpu_threads();
  for (int threads : {1, 2}) {
    set_cpu_threads(threads);
    for (UnaryOp act : {UnaryOp::relu, UnaryOp::gelu})
      for (float p : {0.f, 0.3f}) {
        INFO(unary_op_name(act) << " p " << p << " threads " << threads);
        const Run f = run(true, act, p), u = run(false, act, p);
        CHECK(f.y == u.y);
        CHECK(f.da == u.da);
        CHECK(f.dw == u.dw);
        CHECK(f.db == u.db);
      }
  }
  set_cpu_threads(saved);
}

TEST_CASE("bias_act_dropout: finite differences", "[ops][bias_act_dropout][grad]") {
  const Shape xs{5, 11}, bs{11};
  for (UnaryOp act : {UnaryOp::relu, UnaryOp::gelu}) {
    INFO(unary_op_name(act));
    // dropout on: the op itself with a fixed mask (gradcheck evaluates in inference mode)
    const DropoutMask m{0.4f, 9, 11};
    const std::vector<double> x = test::random_tensor(xs, 5).to_vector<double>(),
                              b = test::random_tensor(bs, 6).to_vector<double>(),
                              w = test::random_tensor(xs, 7, 0.5, 1.5).to_vector<double>();
    auto f = [&](const std::vector<double>& xv, const std::vector<double>& bv) {
      Tensor y = Tensor::empty(xs, DType::f64, Device::cpu());
      bias_act_dropout_forward(Tensor::from_vector(xv, xs), Tensor::from_vector(bv, bs), act, m, y);
      return test::weighted_sum(y, w);
    };
    Tensor dx = Tensor::zeros(xs, DType::f64, Device::cpu()), db = Tensor::zeros(bs, DType::f64, Device::cpu());
    bias_act_dropout_backward(Tensor::from_vector(x, xs), Tensor::from_vector(b, bs), Tensor::from_vector(w, xs), act,
                              m, &dx, &db);
    const std::vector<double> gx = dx.to_vector<double>(), gb = db.to_vector<double>();
    double worst = 0;
    int dropped = 0;
    for (size_t k = 0; k < x.size() + b.size(); ++k) {
      std::vector<double> xh = x, xl = x, bh = b, bl = b;
      double& hi = k < x.size() ? xh[k] : bh[k - x.size()];
      double& lo = k < x.size() ? xl[k] : bl[k - x.size()];
      hi += 1e-6;
      lo -= 1e-6;
      const double numeric = (f(xh, bh) - f(xl, bl)) / 2e-6;
      const double analytic = k < x.size() ? gx[k] : gb[k - x.size()];
      worst = std::max(worst, std::abs(numeric - analytic) / std::max(1.0, std::abs(numeric)));
      dropped += k < x.size() && !dropout_keep(9, 11, k, 0.4f);
    }
    CHECK(worst < 1e-6);
    CHECK(dropped > 5);
    // dropout off: the graph node through gradcheck
    const double err = test::gradcheck(
        {test::random_tensor(xs, 8), test::random_tensor(bs, 9)},
        [act](Graph&, const std::vector<Expr>& in) { return bias_act_dropout(in[0], in[1], act, 0.f); });
    CHECK(err < 1e-6);
  }
}

TEST_CASE("bias_act_dropout: inference mode has no dropout; errors", "[ops][bias_act_dropout]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr x = g.input(Tensor::from_vector(std::vector<float>{-1.f, 2.f, 0.5f, -3.f}, Shape{2, 2}));
  Expr b = g.input(Tensor::from_vector(std::vector<float>{0.5f, -1.f}, Shape{2}));
  CHECK(bias_act_dropout(x, b, UnaryOp::relu, 0.5f).val().to_vector<float>() == std::vector<float>{0.f, 1.f, 1.f, 0.f});
  CHECK_THROWS_WITH(bias_act_dropout(x, b, UnaryOp::tanh, 0.f), Catch::Contains("relu or gelu"));
  Expr b3 = g.input(Tensor::zeros(Shape{3}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(bias_act_dropout(x, b3, UnaryOp::relu, 0.f), Catch::Contains("does not match"));
  CHECK_THROWS_WITH(bias_act_dropout(x, b, UnaryOp::relu, 1.f), Catch::Contains("not in [0, 1)"));
}
