// CPU-vs-CUDA parity of layer norm (f32, bf16 and f16; y, dx, dgamma, dbeta): warp rows (d <= 1024)
// and block rows, packed and scalar paths, many rows (several chunks in the dgamma/dbeta reduction),
// and f32 master gamma/beta with bf16 and f16 x.
#include <catch2/catch.hpp>

#include "graph/expr/cast.h"
#include "graph/expr/layer_norm.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("layer_norm parity", "[gpu][layer_norm]") {
  for (const Shape& shape :
       {Shape{33, 257}, Shape{8, 1024}, Shape{300, 64}, Shape{5, 3000}, Shape{3, 4099}, Shape{1, 1}}) {
    const int64_t d = shape.last();
    Tensor x = test::random_tensor(shape, 61, -3, 5);
    Tensor gamma = test::random_tensor(Shape{d}, 62, 0.5, 1.5), beta = test::random_tensor(Shape{d}, 63);
    for (DType dt : test::kFloatTypes) {
      INFO(shape << " " << dtype_name(dt));
      auto r = test::parity({x, gamma, beta},
                            [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], in[1], in[2]); }, dt,
                            {0, 1, 2});
      CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(r.backward < test::bar(dt, 1e-4, 2e-2));
      auto plain =
          test::parity({x}, [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], {}, {}); }, dt, {0});
      CHECK(plain.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(plain.backward < test::bar(dt, 1e-4, 2e-2));
    }
  }
}

TEST_CASE("layer_norm: f32 gamma/beta with bf16 and f16 input on CUDA", "[gpu][layer_norm]") {
  // Master weights stay f32 while x is bf16 / f16 (the kernels' G = float): the GPU graph casts the
  // rounded gamma and beta back to f32 (on the CPU, in f32 already, the casts are no-ops).
  for (const Shape& shape : {Shape{70, 96}, Shape{3, 2050}}) {  // warp and block rows
    const int64_t d = shape.last();
    Tensor x = test::random_tensor(shape, 64, -2, 2);
    Tensor gamma = test::random_tensor(Shape{d}, 65, 0.5, 1.5), beta = test::random_tensor(Shape{d}, 66);
    for (DType dt : {DType::bf16, DType::f16}) {
      INFO(shape << " " << dtype_name(dt));
      auto r = test::parity({x, gamma, beta}, [](Graph&, const std::vector<Expr>& in) {
        return layer_norm(in[0], cast(in[1], DType::f32), cast(in[2], DType::f32));
      }, dt, {0, 1, 2});
      CHECK(r.forward < test::bar(dt, 0, 2e-2));
      CHECK(r.backward < test::bar(dt, 0, 2e-2));
    }
  }
}
