// Element-wise unary ops: hand-computed values and finite-difference gradients (CPU, f64), and the f32
// forward (tanh and sigmoid by their vectorised forms) against f64.
#include "graph/expr/unary.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "support/gradcheck.h"

using namespace moe;

TEST_CASE("unary: values against hand-computed cases", "[ops][unary]") {
  Tensor x = Tensor::from_vector(std::vector<double>{-2, -0.5, 0, 0.5, 3}, Shape{5});
  auto run = [&](UnaryOp op, float a = 1, float b = 0) {
    Tensor y = Tensor::empty(x.shape(), DType::f64, Device::cpu());
    unary_forward(op, x, y, a, b);
    return y.to_vector<double>();
  };
  CHECK(run(UnaryOp::relu) == std::vector<double>{0, 0, 0, 0.5, 3});
  CHECK(run(UnaryOp::scale, 2, 1) == std::vector<double>{-3, 0, 1, 2, 7});
  CHECK(run(UnaryOp::sigmoid)[2] == Approx(0.5));
  CHECK(run(UnaryOp::gelu)[3] == Approx(0.5 * 0.6914624612740131));
  CHECK(run(UnaryOp::normcdf)[0] == Approx(0.022750131948179195));
  CHECK(run(UnaryOp::erf)[4] == Approx(0.9999779095030014));
  CHECK(run(UnaryOp::softplus)[0] == Approx(std::log1p(std::exp(-2.0))));
  CHECK(run(UnaryOp::tanh)[4] == Approx(std::tanh(3.0)));
}

TEST_CASE("unary: f32 tanh and sigmoid equal f64 within a few ulp", "[ops][unary]") {
  // 100,003 elements: several threads' ranges and a tail past the vector width; values across every branch.
  const Tensor x32 = test::random_tensor(Shape{100003}, 5, -40, 40, DType::f32);
  const Tensor x64 = Tensor::from_vector(x32.to_vector<double>(), x32.shape());  // the same values
  for (UnaryOp op : {UnaryOp::tanh, UnaryOp::sigmoid}) {
    INFO(unary_op_name(op));
    Tensor y32 = Tensor::empty(x32.shape(), DType::f32, Device::cpu());
    Tensor y64 = Tensor::empty(x64.shape(), DType::f64, Device::cpu());
    unary_forward(op, x32, y32);
    unary_forward(op, x64, y64);
    const auto a = y32.to_vector<double>(), b = y64.to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1e-30, std::fabs(b[i])));
    CHECK(worst < 3e-7);  // 2.5 ulp
  }
}

TEST_CASE("unary: finite-difference gradients", "[ops][unary][grad]") {
  const UnaryOp ops[] = {UnaryOp::gelu, UnaryOp::tanh, UnaryOp::sigmoid, UnaryOp::softplus, UnaryOp::exp,
                         UnaryOp::erf, UnaryOp::normcdf, UnaryOp::neg, UnaryOp::square, UnaryOp::scale};
  for (UnaryOp op : ops) {
    for (const Shape& shape : {Shape{1}, Shape{3, 37}}) {
      INFO(unary_op_name(op) << " " << shape);
      Tensor x = test::random_tensor(shape, 7, -2, 2);
      CHECK(test::gradcheck({x}, [op](Graph&, const std::vector<Expr>& in) { return unary(op, in[0], 1.5f, 0.2f); }) < 1e-6);
    }
  }
  // Functions with restricted domains or kinks: inputs kept away from them.
  Tensor pos = test::random_tensor(Shape{4, 5}, 9, 0.2, 3);
  for (UnaryOp op : {UnaryOp::log, UnaryOp::sqrt, UnaryOp::relu, UnaryOp::abs}) {
    INFO(unary_op_name(op));
    CHECK(test::gradcheck({pos}, [op](Graph&, const std::vector<Expr>& in) { return unary(op, in[0]); }) < 1e-6);
  }
}

TEST_CASE("unary: mismatched output shape names op and shapes", "[ops][unary][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor y = Tensor::zeros(Shape{3, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(unary_forward(UnaryOp::relu, x, y), Catch::Contains("relu") && Catch::Contains("[3,2]") &&
                                                            Catch::Contains("[2,3]"));
}

TEST_CASE("unary backward: y, dy and dx must match x (the GPU kernel does not check)", "[ops][unary][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor y = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor dx64 = Tensor::zeros(Shape{2, 3}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(unary_backward(UnaryOp::tanh, x, y, y, dx64),
                    Catch::Contains("tanh") && Catch::Contains("input gradient") && Catch::Contains("f64"));
  Tensor dy64 = Tensor::zeros(Shape{2, 3}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(unary_backward(UnaryOp::tanh, x, y, dy64, y),
                    Catch::Contains("output gradient") && Catch::Contains("f64"));
  Tensor short_y = Tensor::zeros(Shape{2}, DType::f32, Device::cpu());
  Tensor dx = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(unary_backward(UnaryOp::sigmoid, x, short_y, y, dx),
                    Catch::Contains("sigmoid") && Catch::Contains("output") && Catch::Contains("[2]"));
}
