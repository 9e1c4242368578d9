// CPU-vs-CUDA parity of categorical sampling: the same Philox uniforms and the same f32 scan give
// identical draws for f32 weights and for bf16 and f16 weights (exactly representable inputs), including
// zero and degenerate rows. Skipped without a GPU.
#include <catch2/catch.hpp>

#include "graph/expr/cast.h"
#include "graph/expr/categorical.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("categorical_sample parity", "[gpu][categorical]") {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1}, {37, 8}, {1000, 28}, {5000, 3}, {3, 300}}) {
    INFO(rows << "x" << n);
    std::vector<double> v = test::random_tensor(Shape{rows, n}, 3 + static_cast<uint32_t>(n), 0, 1).to_vector<double>();
    for (size_t i = 0; i < v.size(); i += 5) v[i] = 0;  // some never-drawn experts
    // bf16-exact values: both devices accumulate the same floats.
    Tensor p = Tensor::from_vector(
        Tensor::from_vector(v, Shape{rows, n}, Device::cpu(), DType::bf16).to_vector<double>(), Shape{rows, n});
    auto build = [](Graph&, const std::vector<Expr>& in) {
      return cast(categorical_sample(in[0], 17, 4242), DType::f32);
    };
    for (DType dt : test::kFloatTypes) {  // parity() rounds p to f16 for both devices
      INFO(dtype_name(dt));
      CHECK(test::parity({p}, build, dt, {}, false).forward == 0.0);
    }
  }
}
