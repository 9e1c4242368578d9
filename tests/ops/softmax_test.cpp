// Softmax / log-softmax with masks: hand-computed values, fully masked rows (zeros / -inf, zero
// gradient, never NaN), broadcast row masks, finite-difference gradients (f64), errors, and the
// f32 exp_fast of the CPU kernels against std::exp.
#include "graph/expr/softmax.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor u8(const std::vector<int32_t>& v, const Shape& s) {
  std::vector<uint8_t> b(v.begin(), v.end());
  Tensor t = Tensor::empty(s, DType::u8, Device::cpu());
  std::copy(b.begin(), b.end(), t.data<uint8_t>());
  return t;
}
std::vector<double> run(const Tensor& x, const Tensor& mask, bool log) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::cpu());
  softmax_forward(x, mask, y, log);
  return y.to_vector<double>();
}
// Test-only node: -inf -> 0 (gradient passes through finite entries), so masked log-softmax outputs
// can enter a finite-difference check.
Expr finite(const Expr& x) {
  return x.graph().add(
      "finite", x.shape(), x.dtype(), {x},
      [](Node& n) {
        std::vector<double> v = n.in(0).to_vector<double>();
        for (double& e : v) e = std::isinf(e) ? 0 : e;
        n.val = Tensor::from_vector(v, n.shape, Device::cpu(), n.dtype);
      },
      [](Node& n) {
        std::vector<double> v = n.in(0).to_vector<double>(), g = n.grad.to_vector<double>();
        std::vector<double> d = n.grad_of(0).to_vector<double>();
        for (size_t i = 0; i < v.size(); ++i) d[i] += std::isinf(v[i]) ? 0 : g[i];
        n.grad_of(0).copy_from(Tensor::from_vector(d, n.shape, Device::cpu(), n.dtype));
      });
}
}  // namespace

TEST_CASE("softmax: hand-computed values", "[ops][softmax]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 0, 0, 0}, Shape{2, 3});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const auto y = run(x, {}, false);
  CHECK(y[0] == Approx(std::exp(1.0) / z));
  CHECK(y[2] == Approx(std::exp(3.0) / z));
  CHECK(y[4] == Approx(1.0 / 3));
  const auto ly = run(x, {}, true);
  CHECK(ly[1] == Approx(2 - std::log(z)));
  CHECK(ly[5] == Approx(-std::log(3.0)));
  // f32 with large values: no overflow (max subtracted).
  Tensor big = Tensor::from_vector(std::vector<float>{1000, 1000}, Shape{1, 2});
  CHECK(run(big, {}, false) == std::vector<double>{0.5, 0.5});
}

TEST_CASE("softmax: masks, fully masked rows and size-1 rows", "[ops][softmax][mask]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const double ninf = -std::numeric_limits<double>::infinity();
  const double z = std::exp(1.0) + std::exp(3.0);
  const auto y = run(x, u8({1, 0, 1, 0, 0, 0}, Shape{2, 3}), false);
  CHECK(y[0] == Approx(std::exp(1.0) / z));
  CHECK(y[1] == 0);
  CHECK(y[2] == Approx(std::exp(3.0) / z));
  CHECK(std::vector<double>(y.begin() + 3, y.end()) == std::vector<double>{0, 0, 0});
  const auto ly = run(x, u8({1, 0, 1, 0, 0, 0}, Shape{2, 3}), true);
  CHECK(ly[0] == Approx(1 - std::log(z)));
  CHECK(ly[1] == ninf);
  CHECK(std::vector<double>(ly.begin() + 3, ly.end()) == std::vector<double>{ninf, ninf, ninf});
  // One broadcast row [1, 3] for every row.
  const auto b = run(x, u8({0, 1, 1}, Shape{1, 3}), false);
  CHECK(b[0] == 0);
  CHECK(b[3] == 0);
  CHECK(b[4] == Approx(std::exp(5.0) / (std::exp(5.0) + std::exp(6.0))));
  // Rows of one element.
  Tensor one = Tensor::from_vector(std::vector<double>{7, -3}, Shape{2, 1});
  CHECK(run(one, {}, false) == std::vector<double>{1, 1});
  CHECK(run(one, {}, true) == std::vector<double>{0, 0});
  CHECK(run(one, u8({0}, Shape{1}), false) == std::vector<double>{0, 0});
}

TEST_CASE("softmax: fully masked rows take zero gradient, never NaN", "[ops][softmax][mask][grad]") {
  for (bool log : {false, true}) {
    Tensor y = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{2, 2});
    softmax_forward(Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{2, 2}), u8({1, 1, 0, 0}, Shape{2, 2}), y,
                    log);
    Tensor dy = Tensor::from_vector(std::vector<double>{0.3, -0.7, 5, 9}, Shape{2, 2});
    Tensor dx = Tensor::zeros(Shape{2, 2}, DType::f64, Device::cpu());
    softmax_backward(y, dy, dx, log);
    const auto d = dx.to_vector<double>();
    INFO("log " << log);
    CHECK(d[2] == 0);
    CHECK(d[3] == 0);
    CHECK(std::isfinite(d[0]));
    CHECK(d[0] + d[1] == Approx(0).margin(1e-12));  // the gradient of a kept row sums to 0
  }
}

TEST_CASE("softmax: finite-difference gradients", "[ops][softmax][grad]") {
  for (const Shape& shape : {Shape{1, 1}, Shape{1, 5}, Shape{3, 37}, Shape{2, 2, 33}}) {
    INFO(shape);
    Tensor x = test::random_tensor(shape, 11, -3, 3);
    CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return softmax(in[0]); }) < 1e-6);
    CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return log_softmax(in[0]); }) < 1e-6);
  }
  // Masks: a full mask with a fully masked row, and a broadcast row.
  Tensor x = test::random_tensor(Shape{3, 37}, 5, -3, 3);
  std::vector<int32_t> mv(3 * 37);
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = i < 37 ? int(i % 3 != 0) : (i < 74 ? 0 : 1);
  for (Tensor mask : {u8(mv, Shape{3, 37}), u8(std::vector<int32_t>(mv.begin(), mv.begin() + 37), Shape{1, 37})}) {
    INFO("mask " << mask.shape());
    CHECK(test::gradcheck({x}, [mask](Graph&, const std::vector<Expr>& in) { return softmax(in[0], mask); }) < 1e-6);
    CHECK(test::gradcheck(
              {x}, [mask](Graph&, const std::vector<Expr>& in) { return finite(log_softmax(in[0], mask)); }) < 1e-6);
  }
}

TEST_CASE("softmax: errors name the op and the shapes", "[ops][softmax][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor y = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(softmax_forward(x, u8({1, 1}, Shape{1, 2}), y, false),
                    Catch::Contains("softmax") && Catch::Contains("[1,2]") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(softmax_forward(x, Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()), y, true),
                    Catch::Contains("log_softmax") && Catch::Contains("u8"));
  Tensor bad = Tensor::zeros(Shape{3, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(softmax_forward(x, {}, bad, false), Catch::Contains("softmax") && Catch::Contains("[3,2]"));
  Graph g(Device::cpu());
  CHECK_THROWS_WITH(softmax(g.input(x), u8({1, 1, 1, 1}, Shape{4})),
                    Catch::Contains("softmax") && Catch::Contains("[4]"));
}

TEST_CASE("softmax: empty inputs and an all-zero mask", "[ops][softmax][mask]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Tensor empty = Tensor::zeros(Shape{0, 5}, DType::f64, Device::cpu());
  CHECK(softmax(g.input(empty)).val().numel() == 0);
  Tensor x = test::random_tensor(Shape{3, 33}, 2);
  const auto y = log_softmax(g.input(x), u8(std::vector<int32_t>(33, 0), Shape{33})).val().to_vector<double>();
  for (double v : y) CHECK(std::isinf(v));
  const auto s = softmax(g.input(x), u8(std::vector<int32_t>(99, 0), Shape{3, 33})).val().to_vector<double>();
  for (double v : s) CHECK(v == 0);
}

TEST_CASE("exp_fast: within 2 ulp of std::exp", "[ops][softmax]") {
  double worst = 0;
  for (float x = -87.f; x <= 88.f; x += 0.0137f) {
    const double ref = std::exp(static_cast<double>(x)), got = cpu::exp_fast(x);
    worst = std::max(worst, std::abs(got - ref) / ref);
  }
  CHECK(worst < 2.5e-7);  // 2 ulp of f32 (2^-22 = 2.4e-7)
  CHECK(cpu::exp_fast(0.f) == 1.f);
  CHECK(cpu::exp_fast(-1000.f) < 1e-37f);
  CHECK(std::isfinite(cpu::exp_fast(1000.f)));
}

// The row passes run 8 lanes wide where the CPU has AVX2 (ops/cpu_isa.h, run_wide) with the portable build's
// operations in the same order: the bytes must be the portable ones, with and without a mask, with -inf entries,
// rows that are not a multiple of 8 or 64, and a fully masked row.
TEST_CASE("softmax: f32 rows on every instruction set give the portable bytes", "[ops][softmax]") {
  const CpuIsa saved = cpu_isa();
  const int64_t rows = 5, cols = 203;
  Tensor x = test::random_tensor(Shape{rows, cols}, 21, -30, 30, DType::f32);
  x.data<float>()[7] = -std::numeric_limits<float>::infinity();
  std::vector<int32_t> keep(static_cast<size_t>(rows * cols), 1);
  for (int64_t j = 0; j < cols; ++j) keep[size_t(3 * cols + j)] = 0;  // row 3 fully masked
  keep[size_t(cols + 11)] = 0;
  const Tensor mask = u8(keep, Shape{rows, cols});
  for (bool log : {false, true})
    for (bool masked : {false, true}) {
      set_cpu_isa(CpuIsa::portable);
      const auto want = run(x, masked ? mask : Tensor(), log);
      for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
        if (!cpu_supports(isa)) continue;
        set_cpu_isa(isa);
        INFO(enum_name(isa) << " log " << log << " masked " << masked);
        CHECK(run(x, masked ? mask : Tensor(), log) == want);
      }
    }
  set_cpu_isa(saved);
}
