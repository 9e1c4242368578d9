// MoE routing ops (lib/ops/moe_gating.h): hand-computed values, noise statistics, finite-difference
// gradients (CPU, f64), index helpers, threshold masks and error messages.
#include <catch2/catch.hpp>

#include <cmath>

#include "graph/expr/moe_gating.h"
#include "graph/expr/topk.h"
#include "ops/moe_gating.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
double phi_cdf(double z) { return 0.5 * (1 + std::erf(z / std::sqrt(2.0))); }
}  // namespace

TEST_CASE("gate_noise: clean + N(0,1) * sigma with Philox normals", "[ops][moe_gating]") {
  const int64_t n = 20000;
  Tensor clean = Tensor::zeros(Shape{n}, DType::f64, Device::cpu());
  Tensor sigma = Tensor::from_vector(std::vector<double>(n, 1.0), Shape{n});
  Tensor h = Tensor::empty(Shape{n}, DType::f64, Device::cpu());
  gate_noise_forward(clean, sigma, h, 5, 9);
  const std::vector<double> v = h.to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) mean += x / n, sq += x * x / n;
  CHECK(std::abs(mean) < 0.03);
  CHECK(std::abs(sq - 1) < 0.05);
  CHECK(v[7] == Approx(philox_normal(5, 9, 7)).epsilon(1e-6));
  // Same seed and stream -> same noise; another stream -> different noise.
  Tensor h2 = Tensor::empty(Shape{n}, DType::f64, Device::cpu());
  gate_noise_forward(clean, sigma, h2, 5, 9);
  CHECK(h2.to_vector<double>() == v);
  gate_noise_forward(clean, sigma, h2, 5, 10);
  CHECK(h2.to_vector<double>()[0] != v[0]);
}

TEST_CASE("gate_noise: finite-difference gradients", "[ops][moe_gating][grad]") {
  for (const Shape& s : {Shape{1, 1}, Shape{3, 37}}) {
    Tensor c = test::random_tensor(s, 1), sg = test::random_tensor(s, 2, 0.1, 1);
    CHECK(test::gradcheck({c, sg}, [](Graph&, const std::vector<Expr>& in) { return gate_noise(in[0], in[1], 3, 4); }) <
          1e-6);
  }
}

TEST_CASE("prob_in_top_k: hand-computed thresholds", "[ops][moe_gating]") {
  // One row, n = 4, k = 2: noisy = [3, 1, 2, 0] -> top3 = [3, 2, 1].
  Tensor clean = Tensor::from_vector(std::vector<double>{2.5, 0.5, 1.0, 0.2}, Shape{1, 4});
  Tensor noisy = Tensor::from_vector(std::vector<double>{3, 1, 2, 0}, Shape{1, 4});
  Tensor sigma = Tensor::from_vector(std::vector<double>{1, 0.5, 2, 1}, Shape{1, 4});
  Tensor top = Tensor::from_vector(std::vector<double>{3, 2, 1}, Shape{1, 3});
  Tensor p = Tensor::empty(Shape{1, 4}, DType::f64, Device::cpu());
  prob_in_top_k_forward(clean, noisy, sigma, top, p);
  const std::vector<double> v = p.to_vector<double>();
  // experts 0 and 2 are in (noisy > t3 = 1): threshold 1; experts 1, 3 out: threshold t2 = 2.
  CHECK(v[0] == Approx(phi_cdf((2.5 - 1) / 1)));
  CHECK(v[2] == Approx(phi_cdf((1.0 - 1) / 2)));
  CHECK(v[1] == Approx(phi_cdf((0.5 - 2) / 0.5)));  // noisy 1 == t3 is not strictly greater: out
  CHECK(v[3] == Approx(phi_cdf((0.2 - 2) / 1)));
}

TEST_CASE("prob_in_top_k: finite-difference gradients into clean, sigma and the top values", "[ops][moe_gating][grad]") {
  for (int k : {1, 2, 4}) {
    INFO("k " << k);
    const int64_t rows = 3, n = 5;
    Tensor c = test::random_tensor(Shape{rows, n}, 11), sg = test::random_tensor(Shape{rows, n}, 12, 0.3, 1.2);
    Tensor noise = test::random_tensor(Shape{rows, n}, 13, -2, 2);
    // noisy is an input without gradient (its top values carry the threshold gradient).
    auto build = [k](Graph&, const std::vector<Expr>& in) {
      Expr top = topk(in[2], k + 1).values;
      return prob_in_top_k(in[0], in[2], in[1], top);
    };
    CHECK(test::gradcheck({c, sg, noise}, build) < 1e-6);
  }
}

TEST_CASE("route_index, iota_index and threshold_mask", "[ops][moe_gating]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr perm = g.input(Tensor::from_vector(std::vector<int32_t>{5, 0, 3, 2}, Shape{4}));
  CHECK(route_index(perm, 2).val().to_vector<int32_t>() == std::vector<int32_t>{2, 0, 1, 1});
  Expr inner = g.input(Tensor::from_vector(std::vector<int32_t>{1, 0, 2, 1, 0, 0, 2, 2}, Shape{4, 2}));
  CHECK(route_index(perm, 1, inner, 10).val().to_vector<int32_t>() ==
        std::vector<int32_t>{51, 50, 2, 1, 30, 30, 22, 22});
  CHECK(iota_index(g, 7, 3).val().to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0, 1, 1, 1, 2});
  CHECK(iota_index(g, 0).val().numel() == 0);

  Expr x = g.input(Tensor::from_vector(std::vector<double>{0.1, 0.5, 0.3, 0.7, 0.2, 0.3}, Shape{2, 3}));
  Expr th = g.input(Tensor::from_vector(std::vector<double>{0.2, 0.5, 0.25}, Shape{3}));
  CHECK(threshold_mask(x, th).val().to_vector<double>() == std::vector<double>{0, 0, 1, 1, 0, 1});
  Expr ex = g.input(Tensor::from_vector(std::vector<int32_t>{1, 0, 0, 2, 2, 1}, Shape{2, 3}));
  CHECK(threshold_mask(x, th, ex).val().to_vector<double>() == std::vector<double>{0, 1, 1, 1, 0, 0});
}

TEST_CASE("moe gating ops: errors name the op and shapes", "[ops][moe_gating][errors]") {
  Tensor c = Tensor::zeros(Shape{2, 4}, DType::f32, Device::cpu());
  Tensor top = Tensor::zeros(Shape{2, 5}, DType::f32, Device::cpu());
  Tensor p = Tensor::zeros(Shape{2, 4}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(prob_in_top_k_forward(c, c, c, top, p),
                    Catch::Contains("prob_in_top_k") && Catch::Contains("[2,5]") && Catch::Contains("[2,4]"));
  Tensor s = Tensor::zeros(Shape{4, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(gate_noise_forward(c, s, p, 1, 1), Catch::Contains("gate_noise") && Catch::Contains("[4,2]"));
  Tensor th = Tensor::zeros(Shape{3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(threshold_mask(c, Tensor(), th, p), Catch::Contains("threshold_mask") && Catch::Contains("[3]"));
  Tensor ex = Tensor::from_vector(std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3}, Shape{2, 4});
  CHECK_THROWS_WITH(threshold_mask(c, ex, th, p), Catch::Contains("expert id 3"));
}
