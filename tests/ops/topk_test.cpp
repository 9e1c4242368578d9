// Top-k along the last axis: hand-computed values and ties, a brute-force comparison on random
// rows (edge sizes), finite-difference gradients (f64) and error messages.
#include "graph/expr/topk.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <random>

#include "graph/expr/unary.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
struct Out {
  std::vector<double> values;
  std::vector<int32_t> indices;
};
Out run_topk(const Tensor& x, int64_t k) {
  Tensor v = Tensor::empty(x.shape().with(-1, k), x.dtype(), Device::cpu());
  Tensor i = Tensor::empty(x.shape().with(-1, k), DType::i32, Device::cpu());
  topk_forward(x, v, i);
  return {v.to_vector<double>(), i.to_vector<int32_t>()};
}
}  // namespace

TEST_CASE("topk: hand-computed values and ties", "[ops][topk]") {
  Tensor x = Tensor::from_vector(std::vector<double>{3, 1, 3, 2, -1, 0, -7, 5, 5, 5}, Shape{2, 5});
  Out r = run_topk(x, 3);
  CHECK(r.values == std::vector<double>{3, 3, 2, 5, 5, 5});
  CHECK(r.indices == std::vector<int32_t>{0, 2, 3, 7 - 5, 8 - 5, 9 - 5});
  r = run_topk(x, 1);
  CHECK(r.indices == std::vector<int32_t>{0, 2});
  r = run_topk(x, 5);  // a full stable descending sort
  CHECK(r.indices == std::vector<int32_t>{0, 2, 3, 1, 4, 2, 3, 4, 0, 1});
  // -0 and +0 tie (lower index first); NaN ranks above +inf; f32 storage.
  Tensor z = Tensor::from_vector(std::vector<float>{0.f, -0.f, -0.f, INFINITY, NAN, -INFINITY}, Shape{1, 6});
  r = run_topk(z, 6);
  CHECK(r.indices == std::vector<int32_t>{4, 3, 0, 1, 2, 5});
  // Size-1 axis.
  r = run_topk(Tensor::from_vector(std::vector<float>{4, -2, 9}, Shape{3, 1}), 1);
  CHECK(r.values == std::vector<double>{4, -2, 9});
  CHECK(r.indices == std::vector<int32_t>{0, 0, 0});
}

TEST_CASE("topk: random rows against a stable sort", "[ops][topk]") {
  std::mt19937 rng(5);
  for (auto [rows, n, k] : {std::tuple{1, 1, 1}, {3, 33, 2}, {4, 64, 8}, {2, 1000, 16}, {2, 3000, 40}, {5, 7, 7}}) {
    INFO(rows << "x" << n << " k=" << k);
    std::vector<float> v(static_cast<size_t>(rows * n));
    std::uniform_int_distribution<int> u(-20, 20);  // many ties
    for (float& e : v) e = static_cast<float>(u(rng)) * 0.5f;
    Out r = run_topk(Tensor::from_vector(v, Shape{rows, n}), k);
    for (int row = 0; row < rows; ++row) {
      std::vector<int32_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      const float* p = v.data() + row * n;
      std::stable_sort(order.begin(), order.end(), [p](int32_t a, int32_t b) { return p[a] > p[b]; });
      for (int j = 0; j < k; ++j) {
        CHECK(r.indices[static_cast<size_t>(row * k + j)] == order[static_cast<size_t>(j)]);
        CHECK(r.values[static_cast<size_t>(row * k + j)] == p[order[static_cast<size_t>(j)]]);
      }
    }
  }
}

TEST_CASE("topk: expression outputs and finite-difference gradients", "[ops][topk][grad]") {
  Tensor x = test::random_tensor(Shape{3, 37}, 11, -2, 2);
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  TopK t = topk(g.input(x), 4);
  CHECK(t.values.shape() == Shape{3, 4});
  CHECK(t.indices.dtype() == DType::i32);
  Out ref = run_topk(x, 4);
  CHECK(t.values.val().to_vector<double>() == ref.values);
  CHECK(t.indices.val().to_vector<int32_t>() == ref.indices);

  for (int64_t k : {1, 4, 37}) {
    INFO("k=" << k);
    CHECK(test::gradcheck({x}, [k](Graph&, const std::vector<Expr>& in) { return topk(in[0], k).values; }) < 1e-6);
  }
  // Gradient through a function of the values, shape with one row.
  Tensor y = test::random_tensor(Shape{1, 9}, 12, -1, 1);
  CHECK(test::gradcheck({y}, [](Graph&, const std::vector<Expr>& in) { return square(topk(in[0], 3).values); }) < 1e-6);
}

TEST_CASE("topk: backward scatters and accumulates; indices take no gradient", "[ops][topk][grad]") {
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{2, 0, 1, 3}, Shape{2, 2});
  Tensor dv = Tensor::from_vector(std::vector<double>{10, 20, 30, 40}, Shape{2, 2});
  Tensor dx = Tensor::from_vector(std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1}, Shape{2, 4});
  topk_backward(idx, dv, dx);
  CHECK(dx.to_vector<double>() == std::vector<double>{21, 1, 11, 1, 1, 31, 1, 41});

  Graph g(Device::cpu());
  TopK t = topk(g.input(test::random_tensor(Shape{2, 5}, 3), true), 2);
  CHECK(t.values->requires_grad);
  CHECK_FALSE(t.indices->requires_grad);
}

TEST_CASE("topk: errors name the op and shapes", "[ops][topk][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor v = Tensor::empty(Shape{2, 4}, DType::f32, Device::cpu());
  Tensor i = Tensor::empty(Shape{2, 4}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(topk_forward(x, v, i),
                    Catch::Contains("topk") && Catch::Contains("k = 4") && Catch::Contains("[2,3]"));
  Tensor v2 = Tensor::empty(Shape{2, 2}, DType::f32, Device::cpu());
  Tensor i2 = Tensor::empty(Shape{2, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(topk_forward(x, v2, i2), Catch::Contains("topk") && Catch::Contains("i32"));
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  CHECK_THROWS_WITH(topk(g.input(x), 0), Catch::Contains("topk") && Catch::Contains("[2,3]"));
}
