// dtype casts: exact and rounded values between f32/f64/bf16/f16/i32 and from u8, the identity shortcut of the
// expression, gradients through casts (finite differences in f64 and by hand), and errors.
#include "graph/expr/cast.h"

#include <catch2/catch.hpp>

#include "graph/expr/binary.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor cast_to(const Tensor& x, DType dt) {
  Tensor out = Tensor::empty(x.shape(), dt, Device::cpu());
  cast_forward(x, out);
  return out;
}
}  // namespace

TEST_CASE("cast: values", "[ops][cast]") {
  Tensor x = Tensor::from_vector(std::vector<float>{1.f, -2.5f, 1.00390625f, 65504.f, 3.14159265f}, Shape{5});
  // bf16 keeps 8 significant bits: 1 + 2^-8 rounds to even (1), pi -> 3.140625.
  const std::vector<double> b = cast_to(x, DType::bf16).to_vector<double>();
  CHECK(b[0] == 1);
  CHECK(b[1] == -2.5);
  CHECK(b[2] == 1);
  CHECK(b[4] == 3.140625);
  // f16 keeps 11 bits: 1 + 2^-8 is exact, 65504 is the largest finite value.
  const std::vector<double> h = cast_to(x, DType::f16).to_vector<double>();
  CHECK(h[2] == 1.00390625);
  CHECK(h[3] == 65504);
  CHECK(h[4] == Approx(3.140625).margin(1e-3));
  // Round trips f32 -> f64 -> f32 and bf16 -> f32 are exact.
  CHECK(cast_to(cast_to(x, DType::f64), DType::f32).to_vector<float>() == x.to_vector<float>());
  CHECK(cast_to(cast_to(x, DType::bf16), DType::f32).to_vector<double>() == b);
  // f32 <-> i32: truncation toward zero, saturation, NaN -> 0.
  Tensor f = Tensor::from_vector(std::vector<float>{2.7f, -2.7f, 3e9f, -3e9f, NAN}, Shape{5});
  CHECK(cast_to(f, DType::i32).to_vector<int32_t>() == std::vector<int32_t>{2, -2, INT32_MAX, INT32_MIN, 0});
  Tensor i = Tensor::from_vector(std::vector<int32_t>{7, -3, 16777217}, Shape{3});
  CHECK(cast_to(i, DType::f32).to_vector<double>() == std::vector<double>{7, -3, 16777216});
  // u8 (a padding mask) to every floating type, exactly.
  Tensor m = Tensor::from_vector(std::vector<uint8_t>{0, 1, 1, 255}, Shape{4});
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16})
    CHECK(cast_to(m, dt).to_vector<double>() == std::vector<double>{0, 1, 1, 255});
  // Empty tensors.
  CHECK(cast_to(Tensor::zeros(Shape{0, 3}, DType::f32, Device::cpu()), DType::bf16).numel() == 0);
}

TEST_CASE("cast: expressions and gradients", "[ops][cast][grad]") {
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{3}), true);
  CHECK(cast(x, DType::f32).node().id == x.node().id);  // identity shortcut
  Expr y = cast(x, DType::f64);
  CHECK(y.dtype() == DType::f64);
  Expr z = cast(y * y, DType::f32);  // d/dx = 2x
  g.backward_from(z, Tensor::from_vector(std::vector<float>{1, 1, 1}, Shape{3}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{2, 4, 6});
  // f64 -> f32 -> f64 in the finite-difference check: cast gradients are the identity.
  Tensor t = test::random_tensor(Shape{4, 3}, 2);
  CHECK(test::gradcheck(
            {t}, [](Graph&, const std::vector<Expr>& in) { return cast(cast(in[0], DType::f32), DType::f64); }, 1e-3) <
        1e-4);
  // Integer casts pass no gradient (the f32 branch still does).
  Graph g2(Device::cpu());
  Expr a = g2.input(Tensor::from_vector(std::vector<float>{1.5f, 2.5f}, Shape{2}), true);
  Expr s = cast(cast(a, DType::i32), DType::f32) + a;
  g2.backward_from(s, Tensor::from_vector(std::vector<float>{1, 1}, Shape{2}));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{1, 1});
}

TEST_CASE("cast: backward accumulates in the target dtype", "[ops][cast]") {
  Tensor dy = Tensor::from_vector(std::vector<float>{0.5f, -1.f}, Shape{2}, Device::cpu(), DType::bf16);
  Tensor dx = Tensor::from_vector(std::vector<float>{1.f, 1.f}, Shape{2});
  cast_backward(dy, dx);
  CHECK(dx.to_vector<double>() == std::vector<double>{1.5, 0});
}

TEST_CASE("cast: errors name the op, dtypes and shapes", "[ops][cast][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor bad = Tensor::zeros(Shape{3, 2}, DType::bf16, Device::cpu());
  CHECK_THROWS_WITH(cast_forward(x, bad),
                    Catch::Contains("cast") && Catch::Contains("[2,3]") && Catch::Contains("[3,2]"));
  Tensor u = Tensor::zeros(Shape{2, 3}, DType::u8, Device::cpu());
  CHECK_THROWS_WITH(cast_forward(x, u), Catch::Contains("cast") && Catch::Contains("u8"));
  Tensor i = Tensor::zeros(Shape{2, 3}, DType::i32, Device::cpu());
  CHECK_THROWS_WITH(cast_backward(i, x), Catch::Contains("integer"));
  CHECK_THROWS_WITH(cast_forward(u, i), Catch::Contains("cast") && Catch::Contains("u8 to i32"));
}
