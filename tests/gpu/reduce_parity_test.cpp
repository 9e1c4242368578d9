// CPU-vs-CUDA parity of the axis reductions and sum_to_shape in f32, bf16 and f16 (skipped without a
// GPU): last axis (warp and block kernels), inner axes (with and without split-n, and more outer
// rows than grid.y holds), keepdim, whole-tensor sums, and sum_to_shape with one and several summed
// groups.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/reduce.h"
#include "ops/reduce.h"
#include "support/parity.h"

using namespace moe;

namespace {
void check_reduce(ReduceOp r, const Shape& shape, int axis, DType dt) {
  INFO(reduce_op_name(r) << " " << shape << " axis " << axis << " " << dtype_name(dt));
  // Multiples of 1/32: exact in bf16 and f16, so both devices see the same ties for max.
  std::vector<double> v = test::random_tensor(shape, 3 + static_cast<uint32_t>(r), -3, 3).to_vector<double>();
  for (double& e : v) e = std::floor(e * 32) / 32;
  const Tensor x = Tensor::from_vector(v, shape, Device::cpu(), DType::f64);
  auto res = test::parity({x}, [&](Graph&, const std::vector<Expr>& in) { return reduce(r, in[0], axis, true); }, dt,
                          {0});
  CHECK(res.forward < test::bar(dt, 1e-5, 1e-2));
  CHECK(res.backward < test::bar(dt, 1e-5, 2e-2));
}
}  // namespace

TEST_CASE("reduce parity", "[gpu][reduce]") {
  const std::pair<Shape, int> cases[] = {{Shape{33, 257}, 1},  {Shape{5, 3000}, -1},      {Shape{1, 1}, 0},
                                         {Shape{4000, 40}, 0}, {Shape{6, 77, 35}, 1},     {Shape{3, 2, 1000, 3}, 2},
                                         {Shape{2, 300, 70}, 0}};
  for (int op = 0; op <= static_cast<int>(ReduceOp::var); ++op)
    for (const auto& [shape, axis] : cases)
      for (DType dt : test::kFloatTypes) check_reduce(static_cast<ReduceOp>(op), shape, axis, dt);
  // More outer rows than grid.y holds: 65535 blocks of 256 threads (about 20 s a launch under the CUDA
  // emulator), looping over the rows the same way for every op and dtype, so one op in one dtype.
  check_reduce(ReduceOp::sum, Shape{70000, 3, 2}, 1, DType::f32);
  Tensor x = test::random_tensor(Shape{123, 45}, 1);
  for (DType dt : test::kFloatTypes) {
    auto res = test::parity({x}, [](Graph&, const std::vector<Expr>& in) { return mean_all(in[0]); }, dt, {0});
    CHECK(res.forward < test::bar(dt, 1e-5, 1e-2));
    CHECK(res.backward < test::bar(dt, 1e-5, 2e-2));
  }
}

TEST_CASE("sum_to_shape parity", "[gpu][reduce]") {
  const std::pair<Shape, Shape> cases[] = {
      {Shape{300, 512}, Shape{512}},   {Shape{300, 512}, Shape{300, 1}},       {Shape{4, 50, 6}, Shape{4, 1, 6}},
      {Shape{4, 50, 6}, Shape{50, 1}}, {Shape{3, 4, 5, 6}, Shape{1, 4, 1, 6}}, {Shape{1, 7}, Shape{7}},
      {Shape{5, 9}, Shape{}}};
  for (const auto& [xs, s] : cases) {
    INFO(xs << " -> " << s);
    Tensor x = test::random_tensor(xs, 2);
    Tensor init = test::random_tensor(s, 3);
    Tensor ref = Tensor::from_vector(init.to_vector<double>(), s, Device::cpu(), DType::f32);
    sum_to_shape(Tensor::from_vector(x.to_vector<double>(), xs, Device::cpu(), DType::f32), s, ref);
    for (DType dt : test::kFloatTypes) {
      INFO(dtype_name(dt));
      Tensor out = Tensor::from_vector(init.to_vector<double>(), s, Device::cuda(0), dt);
      sum_to_shape(Tensor::from_vector(x.to_vector<double>(), xs, Device::cuda(0), dt), s, out);
      CHECK(test::rel_error(out.to_vector<double>(), ref.to_vector<double>()) < test::bar(dt, 1e-5, 2e-2));
    }
  }
}

TEST_CASE("max over long rows of -inf", "[gpu][reduce]") {
  // Rows of more than 1024 elements take the block reduction. Padding its per-warp maxima with
  // -FLT_MAX instead of -inf made the max of a row of -inf -FLT_MAX, which no element equals, so the
  // backward dropped the row's gradient. The CPU reference gives -inf and the gradient to the first.
  const Shape s{2, 3000};
  std::vector<double> v(6000, -INFINITY);
  v[3000 + 17] = 1.5;  // the second row has one finite element
  for (Device d : {Device::cpu(), Device::cuda(0)})
    for (DType dt : test::kFloatTypes) {
      if (d.is_cpu() && dt != DType::f32) continue;
      INFO(d << " " << dtype_name(dt));
      Tensor x = Tensor::from_vector(v, s, d, dt), y = Tensor::empty(Shape{2}, dt, d);
      reduce_forward(ReduceOp::max, x, 1, y);
      const std::vector<double> yv = y.to_vector<double>();
      CHECK(yv[0] == -INFINITY);
      CHECK(yv[1] == 1.5);
      Tensor dx = Tensor::zeros(s, dt, d);
      reduce_backward(ReduceOp::max, x, 1, y, Tensor::from_vector(std::vector<double>{1.0, 2.0}, Shape{2}, d, dt), dx);
      const std::vector<double> g = dx.to_vector<double>();
      double total = 0;
      for (double e : g) total += e;
      CHECK(g[0] == 1.0);
      CHECK(g[3000 + 17] == 2.0);
      CHECK(total == 3.0);
    }
}
