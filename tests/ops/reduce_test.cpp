// Axis reductions and sum_to_shape: hand-computed values, keepdim and whole-tensor reductions,
// edge shapes (size-1 and size-0 axes), finite-difference gradients (CPU, f64) and errors.
#include "graph/expr/reduce.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor vec(std::vector<double> v, Shape s) { return Tensor::from_vector(v, s, Device::cpu(), DType::f64); }
std::vector<double> run(ReduceOp op, const Tensor& x, int axis) {
  Tensor out = Tensor::empty(reduced_shape(x.shape(), axis, false), x.dtype(), Device::cpu());
  reduce_forward(op, x, axis, out);
  return out.to_vector<double>();
}
}  // namespace

TEST_CASE("reduce: values over every axis", "[ops][reduce]") {
  Tensor x = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  CHECK(run(ReduceOp::sum, x, 1) == std::vector<double>{6, 15});
  CHECK(run(ReduceOp::sum, x, 0) == std::vector<double>{5, 7, 9});
  CHECK(run(ReduceOp::mean, x, -1) == std::vector<double>{2, 5});
  CHECK(run(ReduceOp::max, x, 0) == std::vector<double>{4, 5, 6});
  CHECK(run(ReduceOp::var, x, 1)[0] == Approx(2.0 / 3.0));
  CHECK(run(ReduceOp::var, x, 0) == std::vector<double>{2.25, 2.25, 2.25});
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  CHECK(run(ReduceOp::logsumexp, x, 1)[0] == Approx(lse));
  // logsumexp is stable for large inputs.
  CHECK(run(ReduceOp::logsumexp, vec({1000, 1000}, Shape{2}), 0)[0] == Approx(1000 + std::log(2.0)));
  // Middle axis of a 3-D tensor, f32.
  Tensor y = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  Tensor out = Tensor::empty(Shape{2, 2}, DType::f32, Device::cpu());
  reduce_forward(ReduceOp::sum, y, 1, out);
  CHECK(out.to_vector<double>() == std::vector<double>{4, 6, 12, 14});
  // Size-1 axis: identity for sum/max, 0 for var.
  Tensor z = vec({3, -1}, Shape{2, 1});
  CHECK(run(ReduceOp::max, z, 1) == std::vector<double>{3, -1});
  CHECK(run(ReduceOp::var, z, 1) == std::vector<double>{0, 0});
}

TEST_CASE("reduce: empty axes", "[ops][reduce]") {
  Tensor x = Tensor::zeros(Shape{2, 0}, DType::f64, Device::cpu());
  CHECK(run(ReduceOp::sum, x, 1) == std::vector<double>{0, 0});
  CHECK(run(ReduceOp::sum, x, 0).empty());
  CHECK_THROWS_WITH(run(ReduceOp::max, x, 1), Catch::Contains("max") && Catch::Contains("[2,0]"));
  CHECK_THROWS_WITH(run(ReduceOp::mean, x, 1), Catch::Contains("mean") && Catch::Contains("size 0"));
}

TEST_CASE("reduce: expressions, keepdim, sum_all, mean_all", "[ops][reduce]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr x = g.input(vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  CHECK(sum(x, 1, true).shape() == Shape{2, 1});
  CHECK(sum(x, 1, true).val().to_vector<double>() == std::vector<double>{6, 15});
  CHECK(mean(x, 0).shape() == Shape{3});
  CHECK(max(x, -1).val().to_vector<double>() == std::vector<double>{3, 6});
  Expr s = sum_all(x);
  CHECK(s.shape() == Shape{});
  CHECK(s.val().item() == 21);
  CHECK(mean_all(x).val().item() == 3.5);
  CHECK(sum_all(g.input(Tensor::zeros(Shape{0, 4}, DType::f64, Device::cpu()))).val().item() == 0);
  CHECK_THROWS_WITH(mean_all(g.input(Tensor::zeros(Shape{0}, DType::f64, Device::cpu()))),
                    Catch::Contains("mean_all") && Catch::Contains("empty"));
}

TEST_CASE("reduce: finite-difference gradients", "[ops][reduce][grad]") {
  const std::pair<Shape, int> cases[] = {{Shape{1}, 0},       {Shape{3, 37}, 1}, {Shape{3, 37}, 0},
                                         {Shape{2, 5, 3}, 1}, {Shape{4, 1}, 1},  {Shape{2, 3, 4}, -1}};
  for (int op = 0; op <= static_cast<int>(ReduceOp::var); ++op) {
    const ReduceOp r = static_cast<ReduceOp>(op);
    for (const auto& [shape, axis] : cases)
      for (bool keep : {false, true}) {
        INFO(reduce_op_name(r) << " " << shape << " axis " << axis << " keepdim " << keep);
        Tensor x = test::random_tensor(shape, 3 + op, -2, 2);
        CHECK(test::gradcheck({x}, [&](Graph&, const std::vector<Expr>& in) { return reduce(r, in[0], axis, keep); }) <
              1e-6);
      }
  }
  Tensor x = test::random_tensor(Shape{3, 4}, 8);
  CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return sum_all(in[0]); }) < 1e-6);
  CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return mean_all(in[0]); }) < 1e-6);
}

TEST_CASE("reduce: max gradient goes to the first maximal element", "[ops][reduce][grad]") {
  Tensor x = vec({1, 5, 5, 2}, Shape{4}), out = Tensor::empty(Shape{}, DType::f64, Device::cpu());
  reduce_forward(ReduceOp::max, x, 0, out);
  Tensor dx = Tensor::zeros(Shape{4}, DType::f64, Device::cpu());
  reduce_backward(ReduceOp::max, x, 0, out, vec({2}, Shape{}), dx);
  CHECK(dx.to_vector<double>() == std::vector<double>{0, 2, 0, 0});
}

TEST_CASE("sum_to_shape: broadcast axes are summed and added", "[ops][reduce]") {
  Tensor x = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto to = [&](const Tensor& src, Shape s) {
    Tensor out = Tensor::from_vector(std::vector<double>(s.numel(), 1.0), s, Device::cpu(), DType::f64);
    sum_to_shape(src, s, out);
    return out.to_vector<double>();
  };
  CHECK(to(x, Shape{3}) == std::vector<double>{6, 8, 10});
  CHECK(to(x, Shape{1, 3}) == std::vector<double>{6, 8, 10});
  CHECK(to(x, Shape{2, 1}) == std::vector<double>{7, 16});
  CHECK(to(x, Shape{}) == std::vector<double>{22});
  CHECK(to(x, Shape{2, 3}) == std::vector<double>{2, 3, 4, 5, 6, 7});
  Tensor y = test::random_tensor(Shape{2, 3, 4}, 4);
  const std::vector<double> r = to(y, Shape{2, 1, 4}), v = y.to_vector<double>();
  for (int b = 0; b < 2; ++b)
    for (int d = 0; d < 4; ++d)
      CHECK(r[b * 4 + d] == Approx(1 + v[b * 12 + d] + v[b * 12 + 4 + d] + v[b * 12 + 8 + d]));
  CHECK_THROWS_WITH(to(x, Shape{3, 1}),
                    Catch::Contains("sum_to_shape") && Catch::Contains("[3,1]") && Catch::Contains("[2,3]"));
}

TEST_CASE("reduce: errors name the op and shapes", "[ops][reduce][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()),
         out = Tensor::zeros(Shape{3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(reduce_forward(ReduceOp::sum, x, 1, out),
                    Catch::Contains("sum") && Catch::Contains("[3]") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH(reduce_forward(ReduceOp::var, x, 2, out), Catch::Contains("var") && Catch::Contains("axis 2"));
}
