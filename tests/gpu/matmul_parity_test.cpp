// CPU-vs-CUDA parity of matmul (2-D, batched, shared operands, every transposition, and an empty
// inner dimension: out = beta * out) and linear (cuBLASLt bias epilogue and its fallback at odd sizes
// and for a misaligned bias), f32, bf16 and f16, forward and gradients.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

#include "graph/expr/matmul.h"
#include "ops/matmul.h"
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
      for (DType dt : test::kFloatTypes) {
        INFO(cs.a << " " << cs.b << " ta " << ta << " tb " << tb << " " << dtype_name(dt));
        auto r = test::parity({a, b}, [=](Graph&, const std::vector<Expr>& in) { return matmul(in[0], in[1], ta, tb, 0.5f); },
                              dt, {0, 1});
        CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
        CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
      }
    }
}

TEST_CASE("matmul with an empty inner dimension scales the output", "[gpu][matmul]") {
  // k = 0: no GEMM, out = beta * out (beta = 0 overwrites, NaN included); halving is exact in every dtype.
  for (DType dt : test::kFloatTypes)
    for (float beta : {0.f, 0.5f}) {
      INFO(dtype_name(dt) << " beta " << beta);
      std::vector<double> init = test::random_tensor(Shape{2, 3, 5}, 7).to_vector<double>(), res[2];
      if (beta == 0.f) init[4] = NAN;
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev ? Device::cuda(0) : Device::cpu();
        const DType t = dev ? dt : DType::f32;
        Tensor a = Tensor::zeros(Shape{2, 3, 0}, t, d), b = Tensor::zeros(Shape{0, 5}, t, d);
        Tensor out = Tensor::from_vector(test::rounded_to(init, Shape{2, 3, 5}, dt), Shape{2, 3, 5}, d, t);
        matmul_forward(a, b, out, false, false, 1.f, beta);
        res[dev] = out.to_vector<double>();
      }
      CHECK(res[1] == res[0]);
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
    for (DType dt : test::kFloatTypes) {
      INFO(xs[i] << " " << ws[i] << " " << dtype_name(dt));
      auto r = test::parity({x, w, bias}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1], in[2]); },
                            dt, {0, 1, 2});
      CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
      auto nb = test::parity({x, w}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1]); }, dt, {0, 1});
      CHECK(nb.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(nb.backward < test::bar(dt, 1e-5, 2e-2));
    }
  }
}

TEST_CASE("linear with a bias vector that is not 16-byte aligned", "[gpu][matmul][linear]") {
  // cuBLASLt's bias epilogue needs a 16-byte-aligned bias vector (the emulator's cuBLASLt fails the
  // matmul otherwise, as the GPU does); a bias that is a view at an odd element offset must take the
  // GEMM + bias-kernel path instead.
  Tensor x = test::random_tensor(Shape{9, 24}, 40), w = test::random_tensor(Shape{24, 40}, 41);
  Tensor bias_all = test::random_tensor(Shape{41}, 42);
  Tensor ref = Tensor::empty(Shape{9, 40}, DType::f64, Device::cpu());
  linear_forward(x, w, bias_all.flat_range(1, 40), ref);
  for (DType dt : test::kFloatTypes) {
    INFO(dtype_name(dt));
    auto on_gpu = [dt](const Tensor& t) { return Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cuda(0), dt); };
    const Tensor bias = on_gpu(bias_all).flat_range(1, 40);
    REQUIRE(reinterpret_cast<uintptr_t>(bias.raw()) % 16 != 0);
    Tensor out = Tensor::empty(Shape{9, 40}, dt, Device::cuda(0));
    linear_forward(on_gpu(x), on_gpu(w), bias, out);
    CHECK(test::rel_error(out.to_vector<double>(), ref.to_vector<double>()) < test::bar(dt, 1e-5, 2e-2));
  }
}
