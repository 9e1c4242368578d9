// CPU-vs-CUDA parity of the fused bias + activation + dropout (relu, gelu; with and without
// dropout) in f32, bf16 and f16: values and the gradients of x and the bias, with the same masks.
#include <catch2/catch.hpp>

#include "graph/expr/bias_act_dropout.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("bias_act_dropout parity", "[gpu][bias_act_dropout]") {
  for (const Shape& shape : {Shape{33, 257}, Shape{2, 5, 64}, Shape{1, 3}}) {
    Tensor x = test::random_tensor(shape, 3, -2, 2);
    Tensor b = test::random_tensor(Shape{shape.last()}, 4, -0.5, 0.5);
    for (UnaryOp act : {UnaryOp::relu, UnaryOp::gelu})
      for (float p : {0.f, 0.25f})
        for (DType dt : test::kFloatTypes) {
          INFO(shape << " " << unary_op_name(act) << " p " << p << " " << dtype_name(dt));
          auto r = test::parity(
              {x, b}, [=](Graph&, const std::vector<Expr>& in) { return bias_act_dropout(in[0], in[1], act, p); }, dt,
              {0, 1});
          CHECK(r.forward <= test::bar(dt, 1e-6, 1e-2));
          CHECK(r.backward <= test::bar(dt, 1e-5, 2e-2));
        }
  }
}
