// CPU-vs-CUDA parity of batch norm (f32, bf16 and f16; y, dx, dgamma, dbeta) in training and eval
// mode, including the in-place running-statistics update; C not a multiple of 32, many rows
// (several chunks in the column reductions) and a single column; and f32 master gamma/beta with
// bf16 / f16 x (the kernels' G = float).
#include <catch2/catch.hpp>

#include "graph/expr/batch_norm.h"
#include "graph/expr/cast.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("batch_norm parity", "[gpu][batch_norm]") {
  for (const Shape& shape : {Shape{64, 48}, Shape{1000, 3}, Shape{5, 257}, Shape{4100, 1}}) {
    const int64_t C = shape.last();
    Tensor x = test::random_tensor(shape, 71, -3, 5);
    Tensor gamma = test::random_tensor(Shape{C}, 72, 0.5, 1.5), beta = test::random_tensor(Shape{C}, 73);
    const std::vector<double> rm0 = test::random_tensor(Shape{C}, 74).to_vector<double>();
    const std::vector<double> rv0 = test::random_tensor(Shape{C}, 75, 0.5, 2).to_vector<double>();
    for (bool training : {true, false}) {
      for (DType dt : test::kFloatTypes) {
        // master: gamma and beta cast back to f32 in the graph (a no-op on the CPU, in f32 already).
        for (bool master : {false, true}) {
          if (master && dt == DType::f32) continue;
          INFO(shape << " training " << training << " " << dtype_name(dt) << (master ? " f32 gamma/beta" : ""));
          std::vector<double> running[2];
          int calls = 0;
          auto build = [&](Graph& g, const std::vector<Expr>& in) {
            Tensor rm = Tensor::from_vector(rm0, Shape{C}, g.device(), DType::f32);
            Tensor rv = Tensor::from_vector(rv0, Shape{C}, g.device(), DType::f32);
            auto param = [master](const Expr& p) { return master ? cast(p, DType::f32) : p; };
            Expr y = batch_norm(in[0], param(in[1]), param(in[2]), rm, rv, training, 0.1f, 1e-5f);
            g.forward();
            std::vector<double> a = rm.to_vector<double>(), b = rv.to_vector<double>();
            a.insert(a.end(), b.begin(), b.end());
            running[calls++ % 2] = a;
            return y;
          };
          auto r = test::parity({x, gamma, beta}, build, dt, {0, 1, 2});
          CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
          CHECK(r.backward < test::bar(dt, 1e-4, 2e-2));
          CHECK(test::rel_error(running[1], running[0]) < test::bar(dt, 1e-5, 2e-2));
        }
      }
    }
  }
}
