// CPU-vs-CUDA parity of the broadcasting binary ops in f32, bf16 and f16 (skipped without a GPU):
// same shape (vector path and scalar tail), bias add, column broadcast, scalars, general
// broadcasting, unaligned views, and x op x.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/binary.h"
#include "support/parity.h"

using namespace moe;

namespace {
/// Values k * step + offset in [lo, hi]: exact in bf16, so maximum/minimum pick the same operand
/// on both devices (a on multiples of 1/8, b on odd multiples of 1/16: never equal).
Tensor grid_tensor(const Shape& shape, uint32_t seed, double lo, double hi, double step, double offset) {
  std::vector<double> v = test::random_tensor(shape, seed, lo, hi).to_vector<double>();
  for (double& x : v) x = std::floor(x / step) * step + offset;
  return Tensor::from_vector(v, shape, Device::cpu(), DType::f64);
}
}  // namespace

TEST_CASE("binary parity", "[gpu][binary]") {
  const std::pair<Shape, Shape> cases[] = {
      {Shape{33, 257}, Shape{33, 257}},        // same shape, odd size (vector part + scalar tail)
      {Shape{64, 512}, Shape{64, 512}},        // same shape, vector path
      {Shape{65, 512}, Shape{512}},            // bias add
      {Shape{37, 100}, Shape{100}},            // row broadcast, cols not a multiple of 8
      {Shape{64, 256}, Shape{64, 1}},          // column broadcast
      {Shape{1}, Shape{1000}},                 // scalar
      {Shape{4, 1, 40}, Shape{7, 1}},          // [B,1,D] with [T,1]
      {Shape{1, 256}, Shape{64, 1}},           // outer product: each operand broadcast over one group
      {Shape{64, 1}, Shape{1, 100}},           // the same, other way round, odd columns
      {Shape{3, 1, 5, 1}, Shape{1, 4, 1, 6}},  // general (4 groups)
      {Shape{1}, Shape{1}}};
  for (int op = 0; op <= static_cast<int>(BinaryOp::minimum); ++op) {
    const BinaryOp o = static_cast<BinaryOp>(op);
    for (const auto& [sa, sb] : cases) {
      Tensor a = grid_tensor(sa, 5 + op, -2, 2, 0.125, 0), b = grid_tensor(sb, 9 + op, 0.5, 2.5, 0.125, 0.0625);
      for (DType dt : test::kFloatTypes) {
        INFO(binary_op_name(o) << " " << sa << " " << sb << " " << dtype_name(dt));
        auto r = test::parity({a, b}, [o](Graph&, const std::vector<Expr>& in) { return binary(o, in[0], in[1]); }, dt,
                              {0, 1});
        CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
        CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
      }
    }
  }
}

TEST_CASE("binary parity: x op x and unaligned views", "[gpu][binary]") {
  Tensor x = test::random_tensor(Shape{17, 33}, 3, 0.5, 2);
  for (DType dt : test::kFloatTypes) {
    auto r =
        test::parity({x}, [](Graph&, const std::vector<Expr>& in) { return in[0] * in[0] - in[0] / in[0]; }, dt, {0});
    CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
    CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
  }
  // Views that start one element into their storage take the scalar path.
  Tensor big = test::random_tensor(Shape{1 + 8 * 64}, 4), other = test::random_tensor(Shape{8, 64}, 5);
  Tensor host_ref = Tensor::empty(Shape{8, 64}, DType::f32, Device::cpu());
  Tensor a_cpu = Tensor::from_vector(big.to_vector<double>(), big.shape(), Device::cpu(), DType::f32);
  Tensor b_cpu = Tensor::from_vector(other.to_vector<double>(), other.shape(), Device::cpu(), DType::f32);
  binary_forward(BinaryOp::add, a_cpu.flat_range(1, 512).view(Shape{8, 64}), b_cpu, host_ref);
  Tensor a_gpu = a_cpu.to(Device::cuda(0)), b_gpu = b_cpu.to(Device::cuda(0));
  Tensor out = Tensor::empty(Shape{8, 64}, DType::f32, Device::cuda(0));
  binary_forward(BinaryOp::add, a_gpu.flat_range(1, 512).view(Shape{8, 64}), b_gpu, out);
  CHECK(out.to_vector<float>() == host_ref.to_vector<float>());
}
