// CPU-vs-CUDA parity of layer norm (f32 and bf16; y, dx, dgamma, dbeta): warp rows (d <= 1024) and
// block rows, packed and scalar paths, many rows (several chunks in the dgamma/dbeta reduction),
// and f32 master gamma/beta with bf16 x.
#include <catch2/catch.hpp>

#include "graph/expr/layer_norm.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("layer_norm parity", "[gpu][layer_norm]") {
  for (const Shape& shape :
       {Shape{33, 257}, Shape{8, 1024}, Shape{300, 64}, Shape{5, 3000}, Shape{3, 4099}, Shape{1, 1}}) {
    const int64_t d = shape.last();
    Tensor x = test::random_tensor(shape, 61, -3, 5);
    Tensor gamma = test::random_tensor(Shape{d}, 62, 0.5, 1.5), beta = test::random_tensor(Shape{d}, 63);
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(shape << " " << dtype_name(dt));
      auto r = test::parity({x, gamma, beta},
                            [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], in[1], in[2]); }, dt,
                            {0, 1, 2});
      CHECK(r.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
      CHECK(r.backward < (dt == DType::f32 ? 1e-4 : 2e-2));
      auto plain =
          test::parity({x}, [](Graph&, const std::vector<Expr>& in) { return layer_norm(in[0], {}, {}); }, dt, {0});
      CHECK(plain.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
      CHECK(plain.backward < (dt == DType::f32 ? 1e-4 : 2e-2));
    }
  }
}

TEST_CASE("layer_norm: f32 gamma/beta with bf16 input on CUDA", "[gpu][layer_norm]") {
  const int64_t rows = 70, d = 96;
  Tensor x = test::random_tensor(Shape{rows, d}, 64, -2, 2, DType::f32);
  Tensor gamma = test::random_tensor(Shape{d}, 65, 0.5, 1.5, DType::f32),
         beta = test::random_tensor(Shape{d}, 66, -1, 1, DType::f32);
  Tensor dy = test::random_tensor(Shape{rows, d}, 67, -1, 1, DType::f32);
  std::vector<double> out[2], dg[2], db[2];
  for (int dev = 0; dev < 2; ++dev) {
    const Device D = dev ? Device::cuda(0) : Device::cpu();
    const DType dt = dev ? DType::bf16 : DType::f32;
    auto conv = [&](const Tensor& t, DType k) { return Tensor::from_vector(t.to_vector<double>(), t.shape(), D, k); };
    Tensor xs = conv(x, dt), g = conv(gamma, DType::f32), b = conv(beta, DType::f32), dys = conv(dy, dt);
    Tensor y = Tensor::empty(x.shape(), dt, D), m = Tensor::empty(Shape{rows}, DType::f32, D), r = m.clone();
    layer_norm_forward(xs, g, b, y, m, r);
    Tensor dx, dgt = Tensor::zeros(Shape{d}, DType::f32, D), dbt = dgt.clone();
    layer_norm_backward(xs, g, m, r, dys, dx, dgt, dbt);
    out[dev] = y.to_vector<double>();
    dg[dev] = dgt.to_vector<double>();
    db[dev] = dbt.to_vector<double>();
  }
  CHECK(test::rel_error(out[1], out[0]) < 2e-2);
  CHECK(test::rel_error(dg[1], dg[0]) < 2e-2);
  CHECK(test::rel_error(db[1], db[0]) < 2e-2);
}
