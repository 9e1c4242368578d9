// Fused cross-entropy: hand values, label smoothing against a direct sum over the smoothed target
// distribution, ignore_index rows (zero loss and gradient), agreement with -log_softmax[target],
// finite-difference gradients (f64) and errors (targets out of range, shapes).
#include "graph/expr/cross_entropy.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/softmax.h"
#include "ops/cpu_isa.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }
std::vector<double> run(const Tensor& logits, const Tensor& targets, float eps, int ignore = -1) {
  Tensor loss = Tensor::empty(targets.shape(), cross_entropy_loss_dtype(logits.dtype()), Device::cpu());
  Tensor lse = Tensor::empty(targets.shape(), cross_entropy_loss_dtype(logits.dtype()), Device::cpu());
  cross_entropy_forward(logits, targets, loss, lse, eps, ignore);
  return loss.to_vector<double>();
}
}  // namespace

TEST_CASE("cross_entropy: hand-computed values", "[ops][cross_entropy]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 0, 0, 0}, Shape{2, 3});
  const auto l = run(x, i32({2, 0}, Shape{2}), 0);
  CHECK(l[0] == Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3));
  CHECK(l[1] == Approx(std::log(3.0)));
  // Smoothing on a uniform row: every -logp_j = log 3, so the loss is log 3 for any eps.
  CHECK(run(x, i32({2, 1}, Shape{2}), 0.3f)[1] == Approx(std::log(3.0)));
  // f32 logits give an f32 loss.
  Tensor xf = Tensor::from_vector(std::vector<float>{0, 0}, Shape{1, 2});
  Tensor loss = Tensor::empty(Shape{1}, DType::f32, Device::cpu()), lse = loss.clone();
  cross_entropy_forward(xf, i32({1}, Shape{1}), loss, lse);
  CHECK(loss.item() == Approx(std::log(2.0)));
  CHECK(lse.item() == Approx(std::log(2.0)));
}

TEST_CASE("cross_entropy: label smoothing equals the direct sum over q", "[ops][cross_entropy]") {
  const int N = 5, V = 37;
  Tensor x = test::random_tensor(Shape{N, V}, 3, -4, 4);
  std::vector<int32_t> t = {0, 36, 5, 17, 2};
  const auto xv = x.to_vector<double>();
  for (float eps : {0.f, 0.1f, 0.25f}) {
    const auto l = run(x, i32(t, Shape{N}), eps);
    for (int n = 0; n < N; ++n) {
      double z = 0;
      for (int j = 0; j < V; ++j) z += std::exp(xv[n * V + j]);
      const double eps_i = eps / (V - 1.0);
      double direct = 0;  // sum_j -q_j log p_j with q_t = 1 - eps, q_j = eps/(V-1)
      for (int j = 0; j < V; ++j) direct -= (j == t[n] ? 1.0 - eps : eps_i) * (xv[n * V + j] - std::log(z));
      INFO("eps " << eps << " row " << n);
      CHECK(l[n] == Approx(direct).epsilon(1e-5));
    }
  }
}

TEST_CASE("cross_entropy: equals -log_softmax at the target; ignore_index rows", "[ops][cross_entropy]") {
  Tensor x = test::random_tensor(Shape{4, 33}, 8, -3, 3);
  Tensor t = i32({3, -100, 32, 0}, Shape{4});
  const auto l = run(x, t, 0, -100);
  Tensor ls = Tensor::empty(x.shape(), DType::f64, Device::cpu());
  softmax_forward(x, {}, ls, true);
  const auto lv = ls.to_vector<double>();
  CHECK(l[0] == Approx(-lv[3]));
  CHECK(l[1] == 0);
  CHECK(l[2] == Approx(-lv[2 * 33 + 32]));
  CHECK(l[3] == Approx(-lv[3 * 33]));
  CHECK(count_non_ignored(t, -100) == 3);
  // The ignored row takes exactly zero gradient.
  Graph g(Device::cpu());
  Expr xe = g.input(x, true);
  Expr loss = cross_entropy(xe, g.input(t), 0.1f, -100);
  g.forward();
  g.backward_from(loss, Tensor::from_vector(std::vector<double>{1, 1, 1, 1}, Shape{4}));
  const auto gx = xe.grad().to_vector<double>();
  for (int j = 0; j < 33; ++j) CHECK(gx[33 + j] == 0);
  double row0 = 0;
  for (int j = 0; j < 33; ++j) row0 += gx[j];
  CHECK(row0 == Approx(0).margin(1e-12));  // softmax - q sums to 0
}

TEST_CASE("cross_entropy: finite-difference gradients", "[ops][cross_entropy][grad]") {
  struct Case {
    Shape shape;
    std::vector<int32_t> t;
    float eps;
  };
  for (const Case& c : {Case{Shape{1, 1}, {0}, 0.f}, Case{Shape{1, 2}, {1}, 0.2f},
                        Case{Shape{4, 37}, {1, -1, 36, 0}, 0.1f}, Case{Shape{2, 3, 5}, {0, 4, -1, 2, 3, 1}, 0.f}}) {
    INFO(c.shape << " eps " << c.eps);
    std::vector<int64_t> ts = c.shape.vec();
    ts.pop_back();
    Tensor x = test::random_tensor(c.shape, 21, -3, 3);
    Tensor t = i32(c.t, Shape(ts));
    const float eps = c.eps;
    CHECK(test::gradcheck({x, t},
                          [eps](Graph&, const std::vector<Expr>& in) { return cross_entropy(in[0], in[1], eps); }, 1e-6,
                          {0}) < 1e-6);
  }
}

TEST_CASE("cross_entropy: errors name the op, the target and the shapes", "[ops][cross_entropy][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 5}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(run(x, i32({1, 5}, Shape{2}), 0),
                    Catch::Contains("cross_entropy") && Catch::Contains("target 5") && Catch::Contains("[2,5]"));
  CHECK_THROWS_WITH(run(x, i32({1, -2}, Shape{2}), 0), Catch::Contains("target -2"));
  Graph g(Device::cpu());
  CHECK_THROWS_WITH(cross_entropy(g.input(x), g.input(i32({1, 2, 3}, Shape{3}))),
                    Catch::Contains("cross_entropy") && Catch::Contains("[3]") && Catch::Contains("[2,5]"));
  Tensor one = Tensor::zeros(Shape{2, 1}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(run(one, i32({0, 0}, Shape{2}), 0.1f), Catch::Contains("at least 2 classes"));
}

TEST_CASE("cross_entropy: no rows and all rows ignored", "[ops][cross_entropy]") {
  Graph g(Device::cpu());
  Expr x0 = g.input(Tensor::zeros(Shape{0, 7}, DType::f64, Device::cpu()), true);
  Expr l0 = cross_entropy(x0, g.input(Tensor::from_vector(std::vector<int32_t>{}, Shape{0})));
  g.forward();
  CHECK(l0.val().numel() == 0);
  Expr x = g.input(test::random_tensor(Shape{2, 7}, 4), true);
  Expr l = cross_entropy(x, g.input(i32({-1, -1}, Shape{2})), 0.1f);
  g.forward();
  CHECK(l.val().to_vector<double>() == std::vector<double>{0, 0});
  g.backward_from(l, Tensor::from_vector(std::vector<double>{1, 1}, Shape{2}));
  for (double v : x.grad().to_vector<double>()) CHECK(v == 0);
}

TEST_CASE("cross_entropy: f32 (vectorised rows, exp_fast) agrees with f64", "[ops][cross_entropy]") {
  const int64_t N = 6, V = 1000;  // rows longer than one 64-element block, a tail of 40
  Tensor x32 = test::random_tensor(Shape{N, V}, 5, -8, 8, DType::f32);
  Tensor x64 = Tensor::from_vector(x32.to_vector<double>(), Shape{N, V});  // the same values
  const std::vector<int32_t> tv = {0, 999, 5, 512, -100, 63};
  const Tensor t = i32(tv, Shape{N});
  for (float eps : {0.f, 0.1f}) {
    Tensor l64 = Tensor::empty(Shape{N}, DType::f64, Device::cpu()), s64 = l64.clone();
    Tensor l32 = Tensor::empty(Shape{N}, DType::f32, Device::cpu()), s32 = l32.clone();
    cross_entropy_forward(x64, t, l64, s64, eps, -100);
    cross_entropy_forward(x32, t, l32, s32, eps, -100);
    const auto a = l64.to_vector<double>(), b = l32.to_vector<double>();
    for (int64_t n = 0; n < N; ++n) CHECK(b[n] == Approx(a[n]).epsilon(1e-5).margin(1e-6));
    const std::vector<double> dl = {1, -2, 0.5, 3, 1, 0.25};
    Tensor dl64 = Tensor::from_vector(dl, Shape{N}), dl32 = Tensor::from_vector(dl, Shape{N}, Device::cpu(), DType::f32);
    Tensor d64 = Tensor::zeros(Shape{N, V}, DType::f64, Device::cpu());
    Tensor d32 = Tensor::zeros(Shape{N, V}, DType::f32, Device::cpu());
    cross_entropy_backward(x64, t, s64, dl64, d64, eps, -100);
    cross_entropy_backward(x32, t, s32, dl32, d32, eps, -100);
    const auto g64 = d64.to_vector<double>(), g32 = d32.to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < g64.size(); ++i) worst = std::max(worst, std::abs(g64[i] - g32[i]));
    INFO("eps " << eps);
    CHECK(worst < 1e-6);
    // 8 lanes wide where the CPU has AVX2 (ops/cpu_isa.h, run_wide): the portable bytes
    const CpuIsa saved = cpu_isa();
    auto on = [&](CpuIsa isa) {  // loss and gradient as computed on `isa`
      set_cpu_isa(isa);
      Tensor lw = Tensor::empty(Shape{N}, DType::f32, Device::cpu()), sw = lw.clone();
      Tensor dw = Tensor::zeros(Shape{N, V}, DType::f32, Device::cpu());
      cross_entropy_forward(x32, t, lw, sw, eps, -100);
      cross_entropy_backward(x32, t, sw, dl32, dw, eps, -100);
      return std::make_pair(lw.to_vector<float>(), dw.to_vector<float>());
    };
    const auto portable = on(CpuIsa::portable);
    for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
      if (!cpu_supports(isa)) continue;
      INFO(enum_name(isa));
      CHECK(on(isa) == portable);
    }
    set_cpu_isa(saved);
  }
}
