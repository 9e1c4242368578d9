// CPU-vs-CUDA parity of dropout: the masks are identical (exact f32 equality, the same zero
// pattern in bf16 and f16), on sizes that are and are not multiples of 4, forward and backward.
#include <catch2/catch.hpp>

#include "graph/expr/dropout.h"
#include "ops/dropout.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("dropout parity: identical masks", "[gpu][dropout]") {
  for (const Shape& shape : {Shape{33, 257}, Shape{64, 128}, Shape{1}}) {
    Tensor x = test::random_tensor(shape, 3, 0.5, 2);  // no zeros, so zeros mark dropped elements
    for (DType dt : test::kFloatTypes) {
      INFO(shape << " " << dtype_name(dt));
      auto r = test::parity({x}, [](Graph&, const std::vector<Expr>& in) { return dropout(in[0], 0.25f); }, dt, {0});
      CHECK(r.forward <= test::bar(dt, 0, 1e-2));  // f32 exactly; bf16 / f16 within the rounding of x / 0.75
      CHECK(r.backward <= test::bar(dt, 0, 1e-2));
      Tensor yc = Tensor::empty(shape, DType::f32, Device::cpu());
      dropout_forward(Tensor::from_vector(x.to_vector<double>(), shape, Device::cpu(), DType::f32), yc, 0.25f, 5, 6);
      Tensor yg = Tensor::empty(shape, dt, Device::cuda(0));
      dropout_forward(Tensor::from_vector(x.to_vector<double>(), shape, Device::cuda(0), dt), yg, 0.25f, 5, 6);
      const auto a = yc.to_vector<float>(), b = yg.to_vector<float>();
      for (size_t i = 0; i < a.size(); ++i) REQUIRE((a[i] == 0.f) == (b[i] == 0.f));
    }
  }
}
