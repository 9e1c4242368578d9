// CPU-vs-CUDA parity of matmul (2-D, batched, shared operands, every transposition) and linear
// (cuBLASLt bias epilogue and its fallback at odd sizes), f32 and bf16, forward and gradients.
#include <catch2/catch.hpp>

#include "graph/expr/matmul.h"
#include "support/parity.h"

using namespace moe;

namespace {
Shape t2(const Shape& s, bool t) {
  std::vector<int64_t> d = s.vec();
  if (t) std::swap(d[d.size() - 1], d[d.size() - 2]);
  return Shape(d);
}
}  // namespace

TEST_CASE("matmul parity", "[gpu][matmul]") {
  struct Case { Shape a, b; };
  const Case cases[] = {{{1, 1}, {1, 1}},          {{37, 70}, {70, 45}},     {{64, 128}, {128, 96}},
                        {{3, 33, 40}, {3, 40, 17}}, {{2, 3, 19, 24}, {24, 31}}, {{4, 21, 16}, {16, 9}},
                        {{13, 24}, {5, 24, 7}}};
  uint32_t seed = 1;
  for (const Case& cs : cases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      Tensor a = test::random_tensor(t2(cs.a, ta), seed++), b = test::random_tensor(t2(cs.b, tb), seed++);
      for (DType dt : {DType::f32, DType::bf16}) {
        INFO(cs.a << " " << cs.b << " ta " << ta << " tb " << tb << " " << dtype_name(dt));
        auto r = test::parity({a, b}, [=](Graph&, const std::vector<Expr>& in) { return matmul(in[0], in[1], ta, tb, 0.5f); },
                              dt, {0, 1});
        CHECK(r.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
        CHECK(r.backward < (dt == DType::f32 ? 1e-5 : 2e-2));
      }
    }
}

TEST_CASE("matmul parity with TF32 allowed", "[gpu][matmul]") {
  set_allow_tf32(true);
  Tensor a = test::random_tensor(Shape{96, 256}, 5), b = test::random_tensor(Shape{256, 80}, 6);
  auto r = test::parity({a, b}, [](Graph&, const std::vector<Expr>& in) { return matmul(in[0], in[1]); }, DType::f32, {0, 1});
  set_allow_tf32(false);
  CHECK(r.forward < 5e-3);
  CHECK(r.backward < 5e-3);
}

TEST_CASE("linear parity", "[gpu][matmul][linear]") {
  // The last case has enough rows for the bias gradient to be split over row slices.
  const Shape xs[] = {Shape{4, 33, 96}, Shape{5, 7, 13}, Shape{1, 8}, Shape{3, 700, 40}};
  const Shape ws[] = {Shape{96, 72}, Shape{13, 11}, Shape{8, 1}, Shape{40, 72}};
  for (int i = 0; i < 4; ++i) {
    Tensor x = test::random_tensor(xs[i], 10 + i), w = test::random_tensor(ws[i], 20 + i);
    Tensor bias = test::random_tensor(Shape{ws[i][1]}, 30 + i);
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(xs[i] << " " << ws[i] << " " << dtype_name(dt));
      auto r = test::parity({x, w, bias}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1], in[2]); },
                            dt, {0, 1, 2});
      CHECK(r.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
      CHECK(r.backward < (dt == DType::f32 ? 1e-5 : 2e-2));
      auto nb = test::parity({x, w}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1]); }, dt, {0, 1});
      CHECK(nb.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
      CHECK(nb.backward < (dt == DType::f32 ? 1e-5 : 2e-2));
    }
  }
}
