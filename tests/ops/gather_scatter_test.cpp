// index_select / index_add / gather_last / scatter_add_last: hand-computed values, repeated
// indices, finite-difference gradients (f64), empty index sets and error messages.
#include "graph/expr/gather_scatter.h"

#include <catch2/catch.hpp>

#include "ops/gather_scatter.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Graph eager() { return Graph(Device::cpu(), nullptr, GraphOptions{.training = false}); }
Tensor vec(std::vector<double> v, Shape s) { return Tensor::from_vector(v, s); }
Tensor ids(std::vector<int32_t> v, Shape s) { return Tensor::from_vector(v, s); }
}  // namespace

TEST_CASE("gather_scatter: hand-computed values", "[ops][gather_scatter]") {
  Graph g = eager();
  Expr x = g.input(vec({1, 2, 3, 4, 5, 6}, Shape{3, 2}));
  Expr idx = g.input(ids({2, 0, 2}, Shape{3}));
  CHECK(index_select(x, idx).val().to_vector<double>() == std::vector<double>{5, 6, 1, 2, 5, 6});
  Expr src = g.input(vec({10, 20, 30, 40, 50, 60}, Shape{3, 2}));
  // Row 2 receives two additions.
  CHECK(index_add(x, idx, src).val().to_vector<double>() == std::vector<double>{31, 42, 3, 4, 65, 86});
  Expr m = g.input(vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  Expr pick = g.input(ids({2, 0, 1, 1}, Shape{2, 2}));
  CHECK(gather_last(m, pick).val().to_vector<double>() == std::vector<double>{3, 1, 5, 5});
  Expr add = g.input(vec({1, 1, 1, 1}, Shape{2, 2}));
  CHECK(scatter_add_last(m, pick, add).val().to_vector<double>() == std::vector<double>{2, 2, 4, 4, 7, 6});
  // Plain copies work for any dtype: i32 rows.
  Tensor ti = ids({1, 2, 3, 4}, Shape{2, 2}), out = Tensor::empty(Shape{3, 2}, DType::i32, Device::cpu());
  index_select_forward(ti, ids({1, 1, 0}, Shape{3}), out);
  CHECK(out.to_vector<int32_t>() == std::vector<int32_t>{3, 4, 3, 4, 1, 2});
  // 3-D rows and a last-axis gather with leading batch axes.
  Tensor x3 = test::random_tensor(Shape{4, 3, 5}, 3);
  Tensor o3 = Tensor::empty(Shape{2, 3, 5}, DType::f64, Device::cpu());
  index_select_forward(x3, ids({3, 1}, Shape{2}), o3);
  const auto xv = x3.to_vector<double>(), ov = o3.to_vector<double>();
  CHECK(std::vector<double>(ov.begin(), ov.begin() + 15) == std::vector<double>(xv.begin() + 45, xv.end()));
  CHECK(std::vector<double>(ov.begin() + 15, ov.end()) == std::vector<double>(xv.begin() + 15, xv.begin() + 30));
}

TEST_CASE("gather_scatter: empty index sets", "[ops][gather_scatter]") {
  Graph g = eager();
  Expr x = g.input(vec({1, 2, 3, 4}, Shape{2, 2}));
  Expr none = g.input(Tensor::empty(Shape{0}, DType::i32, Device::cpu()));
  CHECK(index_select(x, none).shape() == Shape{0, 2});
  Expr src = g.input(Tensor::empty(Shape{0, 2}, DType::f64, Device::cpu()));
  CHECK(index_add(x, none, src).val().to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  Expr k0 = g.input(Tensor::empty(Shape{2, 0}, DType::i32, Device::cpu()));
  CHECK(gather_last(x, k0).shape() == Shape{2, 0});
}

TEST_CASE("gather_scatter: finite-difference gradients", "[ops][gather_scatter][grad]") {
  Tensor x = test::random_tensor(Shape{5, 3, 7}, 1);
  Tensor idx = ids({4, 0, 4, 2, 4, 1}, Shape{6});  // repeats: gradients add up
  CHECK(test::gradcheck({x, idx}, [](Graph&, const std::vector<Expr>& in) { return index_select(in[0], in[1]); }, 1e-6,
                        {0}) < 1e-6);
  Tensor src = test::random_tensor(Shape{6, 3, 7}, 2);
  CHECK(test::gradcheck({x, idx, src},
                        [](Graph&, const std::vector<Expr>& in) { return index_add(in[0], in[1], in[2]); }, 1e-6,
                        {0, 2}) < 1e-6);
  Tensor v = test::random_tensor(Shape{2, 3, 33}, 3);
  Tensor k = ids({0, 32, 5, 5, 1, 2, 31, 31, 31, 7, 8, 9, 10, 11, 12, 0, 0, 0}, Shape{2, 3, 3});
  CHECK(test::gradcheck({v, k}, [](Graph&, const std::vector<Expr>& in) { return gather_last(in[0], in[1]); }, 1e-6,
                        {0}) < 1e-6);
  Tensor s = test::random_tensor(Shape{2, 3, 3}, 4);
  CHECK(test::gradcheck({v, k, s},
                        [](Graph&, const std::vector<Expr>& in) { return scatter_add_last(in[0], in[1], in[2]); }, 1e-6,
                        {0, 2}) < 1e-6);
  Tensor one = test::random_tensor(Shape{1, 1}, 5);
  CHECK(test::gradcheck({one, ids({0, 0, 0}, Shape{3})},
                        [](Graph&, const std::vector<Expr>& in) { return index_select(in[0], in[1]); }, 1e-6,
                        {0}) < 1e-6);
}

TEST_CASE("gather_scatter: errors name the op, index and shapes", "[ops][gather_scatter][errors]") {
  Graph g = eager();
  Expr x = g.input(vec({1, 2, 3, 4}, Shape{2, 2}));
  CHECK_THROWS_WITH(index_select(x, g.input(ids({0, 2}, Shape{2}))),
                    Catch::Contains("index_select") && Catch::Contains("index 2") && Catch::Contains("[0, 2)"));
  CHECK_THROWS_WITH(index_select(x, g.input(ids({-1}, Shape{1}))), Catch::Contains("index -1"));
  CHECK_THROWS_WITH(index_select(x, g.input(ids({0, 1}, Shape{1, 2}))),
                    Catch::Contains("index_select") && Catch::Contains("1-D") && Catch::Contains("[1,2]"));
  CHECK_THROWS_WITH(index_select(x, g.input(vec({0}, Shape{1}))),
                    Catch::Contains("index_select") && Catch::Contains("i32"));
  CHECK_THROWS_WITH(index_add(x, g.input(ids({0}, Shape{1})), g.input(vec({1, 2, 3}, Shape{1, 3}))),
                    Catch::Contains("index_add") && Catch::Contains("[1,3]") && Catch::Contains("[2,2]"));
  CHECK_THROWS_WITH(gather_last(x, g.input(ids({0, 5}, Shape{2, 1}))),
                    Catch::Contains("gather_last") && Catch::Contains("index 5") && Catch::Contains("[0, 2)"));
  CHECK_THROWS_WITH(gather_last(x, g.input(ids({0, 1, 0}, Shape{3, 1}))),
                    Catch::Contains("gather_last") && Catch::Contains("[3,1]") && Catch::Contains("[2,2]"));
}
