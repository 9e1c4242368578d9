// Embedding lookup: hand-computed values with scale, ids of several shapes, mixed table/output
// dtypes, finite-difference gradients (f64, repeated ids) and out-of-range errors.
#include "graph/expr/embedding.h"

#include <catch2/catch.hpp>

#include "ops/embedding.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor ids(std::vector<int32_t> v, Shape s) { return Tensor::from_vector(v, s); }
}  // namespace

TEST_CASE("embedding: hand-computed values", "[ops][embedding]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr table = g.input(Tensor::from_vector(std::vector<double>{0, 1, 10, 11, 20, 21}, Shape{3, 2}));
  Expr y = embedding(table, ids({2, 0, 2, 1}, Shape{2, 2}), 0.5f);
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK(y.val().to_vector<double>() == std::vector<double>{10, 10.5, 0, 0.5, 10, 10.5, 5, 5.5});
  // A single id (scalar ids -> [D]) and an f32 output read from an f64 table.
  Expr s = embedding(table, ids({1}, Shape{}), 1.f, DType::f32);
  CHECK(s.shape() == Shape{2});
  CHECK(s.dtype() == DType::f32);
  CHECK(s.val().to_vector<double>() == std::vector<double>{10, 11});
  Expr none = embedding(table, ids({}, Shape{0, 3}));
  CHECK(none.shape() == Shape{0, 3, 2});
}

TEST_CASE("embedding: backward adds rows of repeated ids", "[ops][embedding]") {
  Tensor dt = Tensor::zeros(Shape{3, 2}, DType::f32, Device::cpu());
  Tensor dout = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  embedding_backward(ids({2, 0, 2}, Shape{3}), dout, dt, 2.f);
  CHECK(dt.to_vector<float>() == std::vector<float>{6, 8, 0, 0, 12, 16});
}

TEST_CASE("embedding: finite-difference gradients", "[ops][embedding][grad]") {
  Tensor table = test::random_tensor(Shape{7, 33}, 1);
  Tensor id = ids({6, 0, 3, 3, 6, 6, 1, 2}, Shape{2, 4});
  CHECK(test::gradcheck({table, id}, [](Graph&, const std::vector<Expr>& in) { return embedding(in[0], in[1], 5.65f); },
                        1e-6, {0}) < 1e-6);
  Tensor t1 = test::random_tensor(Shape{1, 1}, 2);
  CHECK(test::gradcheck({t1, ids({0, 0}, Shape{2})},
                        [](Graph&, const std::vector<Expr>& in) { return embedding(in[0], in[1]); }, 1e-6, {0}) < 1e-6);
}

TEST_CASE("embedding: errors name the id, V and the shapes", "[ops][embedding][errors]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr table = g.input(Tensor::zeros(Shape{5, 4}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(embedding(table, ids({1, 5}, Shape{2})),
                    Catch::Contains("embedding") && Catch::Contains("id 5") && Catch::Contains("V = 5"));
  CHECK_THROWS_WITH(embedding(table, ids({-3}, Shape{1})), Catch::Contains("id -3"));
  CHECK_THROWS_WITH(embedding(table, g.input(Tensor::zeros(Shape{2}, DType::f32, Device::cpu()))),
                    Catch::Contains("embedding") && Catch::Contains("i32"));
  Expr flat = g.input(Tensor::zeros(Shape{20}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(embedding(flat, ids({1}, Shape{1})), Catch::Contains("embedding") && Catch::Contains("[20]"));
  // bf16 output on the CPU is refused with a clear message.
  CHECK_THROWS_WITH(embedding(table, ids({1}, Shape{1}), 1.f, DType::bf16),
                    Catch::Contains("embedding") && Catch::Contains("bf16"));
  Tensor out = Tensor::empty(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(embedding_forward(table.val(), ids({1, 2}, Shape{2}), out),
                    Catch::Contains("embedding") && Catch::Contains("[2,3]") && Catch::Contains("[2,4]"));
}
