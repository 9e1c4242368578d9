// CPU-vs-CUDA parity of the fused LSTM cell (f32, bf16 and f16; skipped without a GPU): both ops
// chained, with and without a previous state, H a non-multiple of 32.
#include <catch2/catch.hpp>

#include "graph/expr/lstm_cell.h"
#include "graph/expr/shape_ops.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("lstm_cell parity", "[gpu][lstm_cell]") {
  for (int64_t H : {1, 37, 512}) {
    for (bool with_prev : {false, true}) {
      Tensor gates = test::random_tensor(Shape{19, 4 * H}, 3, -3, 3);
      Tensor cp = test::random_tensor(Shape{19, H}, 4, -2, 2);
      for (DType dt : test::kFloatTypes) {
        INFO("H " << H << " prev " << with_prev << " " << dtype_name(dt));
        auto r = test::parity(
            {gates, cp},
            [with_prev](Graph&, const std::vector<Expr>& in) {
              Expr c = lstm_cell_state(in[0], with_prev ? in[1] : Expr());
              return concat({c, lstm_cell_output(in[0], c)}, 1);
            },
            dt, with_prev ? std::vector<int>{0, 1} : std::vector<int>{0});
        CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
        CHECK(r.backward < test::bar(dt, 1e-6, 2e-2));
      }
    }
  }
}
