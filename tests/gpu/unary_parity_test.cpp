// CPU-vs-CUDA parity of the element-wise unary ops in f32, bf16 and f16 (skipped without a GPU).
#include <catch2/catch.hpp>

#include "graph/expr/unary.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("unary parity", "[gpu][unary]") {
  for (int op = 0; op <= static_cast<int>(UnaryOp::scale); ++op) {
    const UnaryOp u = static_cast<UnaryOp>(op);
    const bool positive = u == UnaryOp::log || u == UnaryOp::sqrt;
    Tensor x = test::random_tensor(Shape{33, 257}, 3 + op, positive ? 0.1 : -3, 3);
    for (DType dt : test::kFloatTypes) {
      INFO(unary_op_name(u) << " " << dtype_name(dt));
      auto r = test::parity({x}, [u](Graph&, const std::vector<Expr>& in) { return unary(u, in[0], 0.7f, 0.1f); }, dt, {0});
      CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
      CHECK(r.backward < test::bar(dt, 1e-6, 2e-2));
    }
  }
}
