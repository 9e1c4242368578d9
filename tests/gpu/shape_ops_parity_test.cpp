// CPU-vs-CUDA parity of concat / split / slice / transpose in f32, bf16 and f16 (every transpose
// path: tiled inner swap, last-axis-kept vectors, general), plus i32, u8 and i64 copies (4-, 1- and
// 8-byte units) and accumulation.
#include <catch2/catch.hpp>

#include "graph/expr/shape_ops.h"
#include "ops/shape_ops.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("shape ops parity: concat, slice, split", "[gpu][shape_ops]") {
  Tensor a = test::random_tensor(Shape{5, 33, 7}, 1), b = test::random_tensor(Shape{5, 2, 7}, 2),
         c = test::random_tensor(Shape{5, 64, 7}, 3);
  for (DType dt : test::kFloatTypes) {
    INFO(dtype_name(dt));
    const double fb = test::bar(dt, 1e-6, 1e-2);
    auto r = test::parity({a, b, c}, [](Graph&, const std::vector<Expr>& in) { return concat(in, 1); }, dt, {0, 1, 2});
    CHECK(r.forward < fb);
    CHECK(r.backward < fb);
    r = test::parity({c}, [](Graph&, const std::vector<Expr>& in) { return slice(in[0], 1, 3, 41); }, dt, {0});
    CHECK(r.forward < fb);
    CHECK(r.backward < fb);
    r = test::parity({c},
                     [](Graph&, const std::vector<Expr>& in) {
                       auto p = split(in[0], 2, {3, 4});
                       return concat({p[1], p[0], p[1]}, 2);
                     },
                     dt, {0});
    CHECK(r.forward < fb);
    CHECK(r.backward < fb);
  }
}

TEST_CASE("shape ops parity: transpose paths", "[gpu][shape_ops]") {
  const std::vector<std::pair<Shape, std::vector<int>>> cases = {
      {Shape{2, 37, 4, 64}, {0, 2, 1, 3}},  // [B,T,H,D] -> [B,H,T,D], 16-byte vectors
      {Shape{2, 4, 37, 64}, {0, 2, 1, 3}},  // and back
      {Shape{3, 45, 70}, {0, 2, 1}},        // tiled inner swap, ragged tiles
      {Shape{70, 33}, {1, 0}},
      {Shape{2, 3, 5, 7}, {3, 1, 0, 2}},  // general
      {Shape{6, 1, 5, 3}, {2, 0, 3, 1}},
      {Shape{4, 5, 3}, {0, 2, 1}},
      {Shape{70000, 2, 3}, {0, 2, 1}},  // tiled inner swap, batch > 65535 (grid.z loop)
      {Shape{2100000, 2}, {1, 0}}};     // ceil(R / 32) > 65535 row tiles: the general kernel instead
  for (const auto& [shape, perm] : cases) {
    Tensor x = test::random_tensor(shape, 7);
    for (DType dt : test::kFloatTypes) {
      INFO(shape << " " << dtype_name(dt));
      auto r =
          test::parity({x}, [perm](Graph&, const std::vector<Expr>& in) { return transpose(in[0], perm); }, dt, {0});
      CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
      CHECK(r.backward < test::bar(dt, 1e-6, 1e-2));
    }
  }
}

TEST_CASE("shape ops parity: integer copies and accumulation on the GPU", "[gpu][shape_ops]") {
  std::vector<int32_t> v(3 * 5 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7 + 1);
  const Shape s{3, 5, 7};
  Tensor cpu = Tensor::from_vector(v, s), gpu = cpu.to(Device::cuda(0));
  Tensor yc = Tensor::empty(Shape{7, 3, 5}, DType::i32, Device::cpu());
  Tensor yg = Tensor::empty(Shape{7, 3, 5}, DType::i32, Device::cuda(0));
  transpose_forward(cpu, yc, {2, 0, 1});
  transpose_forward(gpu, yg, {2, 0, 1});
  CHECK(yg.to_vector<int32_t>() == yc.to_vector<int32_t>());
  // Odd offsets and strides force 4-byte units; then accumulate twice.
  Tensor dc = Tensor::zeros(Shape{40}, DType::f32, Device::cpu()),
         dg = Tensor::zeros(Shape{40}, DType::f32, Device::cuda(0));
  Tensor sc = test::random_tensor(Shape{30}, 9, -1, 1, DType::f32), sg = sc.to(Device::cuda(0));
  for (bool acc : {false, true, true}) {
    strided_copy(sc, dc, 3, 5, 9, 11, 1, 3, acc);
    strided_copy(sg, dg, 3, 5, 9, 11, 1, 3, acc);
  }
  CHECK(dg.to_vector<float>() == dc.to_vector<float>());
}

TEST_CASE("shape ops parity: 1- and 8-byte units (u8 and i64)", "[gpu][shape_ops]") {
  // Copies move bytes: u8 tensors go one byte at a time and i64 ones 8 bytes at a time through the
  // tiled inner swap, the general permutation and the last-axis-kept path (3 elements: 3 or 24 bytes);
  // a strided copy at odd offsets and strides.
  const std::vector<std::pair<Shape, std::vector<int>>> cases = {
      {Shape{3, 45, 70}, {0, 2, 1}}, {Shape{2, 3, 5, 7}, {3, 1, 0, 2}}, {Shape{2, 37, 4, 3}, {0, 2, 1, 3}}};
  for (DType dt : {DType::u8, DType::i64}) {
    for (const auto& [shape, perm] : cases) {
      INFO(dtype_name(dt) << " " << shape);
      const Tensor x = test::random_ints(shape, dt, 11);
      Tensor y[2];
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev ? Device::cuda(0) : Device::cpu();
        y[dev] = Tensor::empty(transpose_shape(shape, perm), dt, d);
        transpose_forward(x.to(d), y[dev], perm);
      }
      CHECK(y[1].to_vector<double>() == y[0].to_vector<double>());
    }
    INFO(dtype_name(dt) << " strided copy");
    const Tensor src = test::random_ints(Shape{30}, dt, 12), init = test::random_ints(Shape{40}, dt, 13);
    Tensor dst[2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev ? Device::cuda(0) : Device::cpu();
      dst[dev] = init.to(d);
      strided_copy(src.to(d), dst[dev], 3, 5, 9, 11, 1, 3);
    }
    CHECK(dst[1].to_vector<double>() == dst[0].to_vector<double>());
  }
}
