// Shape ops (concat / split / slice / transpose / reshape): hand-computed values, a naive
// permutation reference, finite-difference gradients (f64), edge shapes and error messages.
#include "graph/expr/shape_ops.h"

#include <catch2/catch.hpp>

#include "ops/shape_ops.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Graph eager() { return Graph(Device::cpu(), nullptr, GraphOptions{.training = false}); }
Tensor vec(std::vector<double> v, Shape s) { return Tensor::from_vector(v, s); }

/// Naive transpose through multi-indices, for comparison.
std::vector<double> naive_transpose(const std::vector<double>& x, const Shape& s, const std::vector<int>& perm) {
  const Shape ys = transpose_shape(s, perm);
  std::vector<double> y(x.size());
  const int n = s.ndim();
  for (int64_t o = 0; o < ys.numel(); ++o) {
    int64_t rest = o, src = 0;
    std::vector<int64_t> oi(static_cast<size_t>(n));
    for (int k = n - 1; k >= 0; --k) {
      oi[static_cast<size_t>(k)] = rest % ys[k];
      rest /= ys[k];
    }
    for (int a = 0; a < n; ++a) {
      int k = 0;
      while (perm[static_cast<size_t>(k)] != a) ++k;
      src = src * s[a] + oi[static_cast<size_t>(k)];
    }
    y[static_cast<size_t>(o)] = x[static_cast<size_t>(src)];
  }
  return y;
}
}  // namespace

TEST_CASE("shape ops: concat, slice and split values", "[ops][shape_ops]") {
  Graph g = eager();
  Expr a = g.input(vec({1, 2, 3, 4}, Shape{2, 2}));
  Expr b = g.input(vec({5, 6}, Shape{2, 1}));
  CHECK(concat({a, b}, 1).val().to_vector<double>() == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(concat({a, b}, -1).shape() == Shape{2, 3});
  CHECK(concat({a, a}, 0).val().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
  Expr x = g.input(vec({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{2, 3, 2}));
  CHECK(slice(x, 1, 1, 2).val().to_vector<double>() == std::vector<double>{2, 3, 4, 5, 8, 9, 10, 11});
  CHECK(slice(x, 2, 1, 1).val().to_vector<double>() == std::vector<double>{1, 3, 5, 7, 9, 11});
  CHECK(slice(x, 1, 3, 0).shape() == Shape{2, 0, 2});
  auto parts = split(x, 1, {1, 0, 2});
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].val().to_vector<double>() == std::vector<double>{0, 1, 6, 7});
  CHECK(parts[1].shape() == Shape{2, 0, 2});
  CHECK(parts[2].val().to_vector<double>() == std::vector<double>{2, 3, 4, 5, 8, 9, 10, 11});
  // Integer tensors are copied unchanged.
  Expr ids = g.input(Tensor::from_vector(std::vector<int32_t>{7, 8, 9}, Shape{3}));
  CHECK(concat({ids, ids}, 0).val().to_vector<int32_t>() == std::vector<int32_t>{7, 8, 9, 7, 8, 9});
}

TEST_CASE("shape ops: transpose against a naive reference", "[ops][shape_ops]") {
  Graph g = eager();
  Expr m = g.input(vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  CHECK(transpose(m, {1, 0}).val().to_vector<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
  const std::vector<std::pair<Shape, std::vector<int>>> cases = {{Shape{2, 3, 4, 5}, {0, 2, 1, 3}},
                                                                 {Shape{2, 3, 4, 5}, {2, 0, 3, 1}},
                                                                 {Shape{3, 1, 33, 7}, {0, 1, 3, 2}},
                                                                 {Shape{1, 5, 1}, {2, 1, 0}},
                                                                 {Shape{4, 6, 2}, {0, 1, 2}},
                                                                 {Shape{5, 3, 2, 2, 3}, {4, 3, 2, 1, 0}},
                                                                 {Shape{1}, {0}}};
  for (const auto& [shape, perm] : cases) {
    INFO(shape);
    Tensor t = test::random_tensor(shape, 5);
    Expr y = transpose(g.input(t), perm);
    CHECK(y.shape() == transpose_shape(shape, perm));
    CHECK(y.val().to_vector<double>() == naive_transpose(t.to_vector<double>(), shape, perm));
    Tensor t32 = test::random_tensor(shape, 6, -1, 1, DType::f32);
    Tensor y32 = Tensor::empty(transpose_shape(shape, perm), DType::f32, Device::cpu());
    transpose_forward(t32, y32, perm);
    CHECK(y32.to_vector<double>() == naive_transpose(t32.to_vector<double>(), shape, perm));
  }
  Tensor i = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  Tensor it = Tensor::empty(Shape{2, 3}, DType::i32, Device::cpu());
  transpose_forward(i, it, {1, 0});
  CHECK(it.to_vector<int32_t>() == std::vector<int32_t>{1, 3, 5, 2, 4, 6});
}

TEST_CASE("shape ops: collapse_perm merges axes that move together", "[ops][shape_ops]") {
  std::vector<int64_t> d;
  std::vector<int> p;
  collapse_perm(Shape{2, 3, 4, 5}, {0, 2, 3, 1}, d, p);
  CHECK(d == std::vector<int64_t>{2, 3, 20});
  CHECK(p == std::vector<int>{0, 2, 1});
  collapse_perm(Shape{2, 1, 4}, {1, 0, 2}, d, p);
  CHECK(d == std::vector<int64_t>{8});
  CHECK(p == std::vector<int>{0});
}

TEST_CASE("shape ops: reshape is a view", "[ops][shape_ops]") {
  Graph g = eager();
  Tensor t = test::random_tensor(Shape{2, 3, 4}, 3);
  Expr x = g.input(t);
  Expr r = reshape(x, {6, -1});
  CHECK(r.shape() == Shape{6, 4});
  CHECK(r.val().shares_storage(t));
  CHECK(r.val().to_vector<double>() == t.to_vector<double>());
  CHECK_THROWS_WITH(reshape(x, Shape{5, 5}),
                    Catch::Contains("reshape") && Catch::Contains("[2,3,4]") && Catch::Contains("[5,5]"));
  CHECK_THROWS_WITH(reshape(x, {-1, -1}), Catch::Contains("more than one -1"));
}

TEST_CASE("shape ops: finite-difference gradients", "[ops][shape_ops][grad]") {
  Tensor a = test::random_tensor(Shape{3, 5, 7}, 1), b = test::random_tensor(Shape{3, 2, 7}, 2),
         c = test::random_tensor(Shape{3, 1, 7}, 3);
  CHECK(test::gradcheck({a, b, c}, [](Graph&, const std::vector<Expr>& in) { return concat(in, 1); }) < 1e-6);
  CHECK(test::gradcheck({a, a}, [](Graph&, const std::vector<Expr>& in) { return concat(in, -1); }) < 1e-6);
  CHECK(test::gradcheck({a}, [](Graph&, const std::vector<Expr>& in) { return slice(in[0], 1, 1, 3); }) < 1e-6);
  // Split, then join the parts in another order (and use one twice): gradients add up.
  CHECK(test::gradcheck({a}, [](Graph&, const std::vector<Expr>& in) {
          auto p = split(in[0], 2, {3, 1, 3});
          return concat({p[2], p[0], p[1], p[2]}, 2);
        }) < 1e-6);
  for (const std::vector<int>& perm : {std::vector<int>{0, 2, 1}, {2, 0, 1}, {1, 0, 2}, {2, 1, 0}}) {
    CHECK(test::gradcheck({a}, [perm](Graph&, const std::vector<Expr>& in) { return transpose(in[0], perm); }) < 1e-6);
  }
  // Through a reshape view: the gradient aliases the input's.
  CHECK(test::gradcheck({a}, [](Graph&, const std::vector<Expr>& in) {
          return transpose(reshape(in[0], Shape{15, 7}), {1, 0});
        }) < 1e-6);
  Tensor one = test::random_tensor(Shape{1, 1}, 4);
  CHECK(test::gradcheck({one, one}, [](Graph&, const std::vector<Expr>& in) { return concat(in, 0); }) < 1e-6);
}

TEST_CASE("shape ops: errors name the op and the shapes", "[ops][shape_ops][errors]") {
  Graph g = eager();
  Expr a = g.input(Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()));
  Expr b = g.input(Tensor::zeros(Shape{3, 3}, DType::f32, Device::cpu()));
  CHECK_THROWS_WITH(concat({a, b}, 1),
                    Catch::Contains("concat") && Catch::Contains("[3,3]") && Catch::Contains("[2,3]"));
  CHECK_NOTHROW(concat({a, b}, 0));
  CHECK_THROWS_WITH(slice(a, 1, 2, 2), Catch::Contains("slice") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(split(a, 1, {1, 1}), Catch::Contains("split") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(transpose(a, {0, 0}), Catch::Contains("transpose") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(transpose(a, {0}), Catch::Contains("transpose") && Catch::Contains("[2,3]"));
  Tensor s = Tensor::zeros(Shape{4}, DType::f32, Device::cpu()), d = Tensor::zeros(Shape{4}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(strided_copy(s, d, 2, 3, 3, 3), Catch::Contains("strided_copy") && Catch::Contains("[4]"));
}
