// CPU-vs-CUDA parity of the fused cross-entropy (f32, bf16 and f16 logits; loss and gradients): warp
// rows (V <= 1024) and block rows, packed and scalar paths (V not a multiple of 8), label
// smoothing and ignore_index rows; out-of-range targets give NaN on the GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "graph/expr/cross_entropy.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("cross_entropy parity", "[gpu][cross_entropy]") {
  for (const Shape& shape : {Shape{64, 1000}, Shape{9, 37}, Shape{5, 8192}, Shape{7, 32003}}) {
    const int64_t N = shape[0], V = shape[1];
    Tensor x = test::random_tensor(shape, 51, -4, 4);
    std::mt19937 rng(3);
    std::vector<int32_t> t(static_cast<size_t>(N));
    for (auto& e : t) e = static_cast<int32_t>(rng() % V);
    t[1] = -100;  // ignored row
    Tensor targets = Tensor::from_vector(t, Shape{N});
    for (float eps : {0.f, 0.1f}) {
      for (DType dt : test::kFloatTypes) {
        INFO(shape << " eps " << eps << " " << dtype_name(dt));
        auto r = test::parity(
            {x, targets}, [eps](Graph&, const std::vector<Expr>& in) { return cross_entropy(in[0], in[1], eps, -100); },
            dt, {0});
        CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
        CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
      }
    }
  }
}

TEST_CASE("cross_entropy: out-of-range targets give NaN on the GPU", "[gpu][cross_entropy]") {
  Tensor x = Tensor::zeros(Shape{2, 5}, DType::f32, Device::cuda(0));
  Tensor t = Tensor::from_vector(std::vector<int32_t>{1, 7}, Shape{2}, Device::cuda(0));
  Tensor loss = Tensor::empty(Shape{2}, DType::f32, Device::cuda(0)), lse = loss.clone();
  cross_entropy_forward(x, t, loss, lse);
  const auto l = loss.to_vector<double>();
  CHECK(l[0] == Approx(std::log(5.0)));
  CHECK(std::isnan(l[1]));
}
