// Dense GEMMs (matmul, batched matmul, linear, bias_grad) on the CPU: hand-computed values, a
// naive triple loop for every shape form and transposition, finite-difference gradients (f64),
// edge shapes (size 1, empty reduction, odd sizes) and error messages.
#include <catch2/catch.hpp>

#include "graph/expr/matmul.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
// Reference: the row-major element formulas, written independently of BLAS.
std::vector<double> naive(const Tensor& a, const Tensor& b, bool ta, bool tb, const MatmulPlan& p) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(p.batch * p.m * p.n), 0.0);
  for (int64_t i = 0; i < p.batch; ++i)
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t c = 0; c < p.n; ++c) {
        double s = 0;
        for (int64_t k = 0; k < p.k; ++k)
          s += va[i * p.stride_a + (ta ? k * p.m + r : r * p.k + k)] * vb[i * p.stride_b + (tb ? c * p.k + k : k * p.n + c)];
        out[i * p.m * p.n + r * p.n + c] = s;
      }
  return out;
}
Shape t2(const Shape& s, bool t) {  // swap the last two axes
  std::vector<int64_t> d = s.vec();
  if (t) std::swap(d[d.size() - 1], d[d.size() - 2]);
  return Shape(d);
}
}  // namespace

TEST_CASE("matmul: hand-computed values", "[ops][matmul]") {
  Tensor a = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = Tensor::from_vector(std::vector<double>{7, 8, 9, 10, 11, 12}, Shape{3, 2});
  Tensor c = Tensor::empty(Shape{2, 2}, DType::f64, Device::cpu());
  matmul_forward(a, b, c);
  CHECK(c.to_vector<double>() == std::vector<double>{58, 64, 139, 154});
  // out = 2 * a^T-as-stored ... : a viewed [3,2] transposed -> [2,3]; b [3,2]; beta keeps old out.
  Tensor ones = Tensor::from_vector(std::vector<double>{1, 1, 1, 1}, Shape{2, 2});
  matmul_forward(a.view(Shape{3, 2}), b, ones, true, false, 2.f, 1.f);
  // a as [3,2] = [[1,2],[3,4],[5,6]], transposed [[1,3,5],[2,4,6]] @ b = [[89,98],[116,128]]
  CHECK(ones.to_vector<double>() == std::vector<double>{179, 197, 233, 257});
  // f32 and the 3-D @ 2-D form: a [2,1,3] with rows flattened.
  Tensor a3 = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 1, 3});
  Tensor b3 = Tensor::from_vector(std::vector<float>{7, 8, 9, 10, 11, 12}, Shape{3, 2});
  Tensor c3 = Tensor::empty(Shape{2, 1, 2}, DType::f32, Device::cpu());
  matmul_forward(a3, b3, c3);
  CHECK(c3.to_vector<float>() == std::vector<float>{58, 64, 139, 154});
}

TEST_CASE("matmul: every shape form and transposition against a naive loop", "[ops][matmul]") {
  struct Case { Shape a, b; };  // untransposed shapes of op(a) and op(b)
  const Case cases[] = {{{1, 1}, {1, 1}},        {{5, 33}, {33, 17}},          {{3, 4, 7}, {3, 7, 2}},
                        {{2, 3, 5, 9}, {2, 3, 9, 4}}, {{2, 3, 6, 5}, {5, 3}}, {{4, 37, 6}, {6, 19}},
                        {{6, 5}, {3, 5, 4}},     {{1, 3, 2}, {2, 1}}};
  uint32_t seed = 1;
  for (const Case& cs : cases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      INFO(cs.a << " " << cs.b << " ta " << ta << " tb " << tb);
      Tensor a = test::random_tensor(t2(cs.a, ta), seed++), b = test::random_tensor(t2(cs.b, tb), seed++);
      const MatmulPlan p = matmul_plan(a.shape(), b.shape(), ta, tb);
      Tensor out = test::random_tensor(p.out, seed++);  // beta = 0 must ignore old contents
      matmul_forward(a, b, out, ta, tb, 1.f, 0.f);
      const auto ref = naive(a, b, ta, tb, p);
      const auto got = out.to_vector<double>();
      REQUIRE(got.size() == ref.size());
      for (size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == Approx(ref[i]).margin(1e-12));
      // f32 agrees with f64 too.
      Tensor af = Tensor::from_vector(a.to_vector<double>(), a.shape(), Device::cpu(), DType::f32);
      Tensor bf = Tensor::from_vector(b.to_vector<double>(), b.shape(), Device::cpu(), DType::f32);
      Tensor of = Tensor::empty(p.out, DType::f32, Device::cpu());
      matmul_forward(af, bf, of, ta, tb);
      const auto gf = of.to_vector<double>();
      for (size_t i = 0; i < ref.size(); ++i) CHECK(gf[i] == Approx(ref[i]).margin(1e-5));
    }
}

TEST_CASE("matmul: output shapes of the batched forms", "[ops][matmul]") {
  CHECK(matmul_plan(Shape{2, 3, 4}, Shape{4, 5}, false, false).out == Shape{2, 3, 5});
  CHECK(matmul_plan(Shape{2, 4, 3}, Shape{4, 5}, true, false).out == Shape{2, 3, 5});
  CHECK(matmul_plan(Shape{3, 4}, Shape{7, 4, 5}, false, false).out == Shape{7, 3, 5});
  CHECK(matmul_plan(Shape{7, 3, 4}, Shape{7, 5, 4}, false, true).out == Shape{7, 3, 5});
  CHECK(matmul_plan(Shape{4, 3}, Shape{4, 5}, true, false).out == Shape{3, 5});
}

TEST_CASE("matmul: empty reduction scales the output by beta", "[ops][matmul]") {
  Tensor a = Tensor::zeros(Shape{2, 0}, DType::f64, Device::cpu());
  Tensor b = Tensor::zeros(Shape{0, 3}, DType::f64, Device::cpu());
  Tensor out = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  matmul_forward(a, b, out, false, false, 1.f, 0.5f);
  CHECK(out.to_vector<double>() == std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
}

TEST_CASE("matmul: finite-difference gradients", "[ops][matmul][grad]") {
  struct Case { Shape a, b; };
  const Case cases[] = {{{1, 1}, {1, 1}}, {{3, 5}, {5, 4}}, {{2, 3, 5}, {2, 5, 3}}, {{2, 3, 4}, {4, 3}},
                        {{2, 2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 3}}};
  uint32_t seed = 100;
  for (const Case& cs : cases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      INFO(cs.a << " " << cs.b << " ta " << ta << " tb " << tb);
      Tensor a = test::random_tensor(t2(cs.a, ta), seed++), b = test::random_tensor(t2(cs.b, tb), seed++);
      CHECK(test::gradcheck({a, b}, [=](Graph&, const std::vector<Expr>& in) {
              return matmul(in[0], in[1], ta, tb, 0.7f);
            }) < 1e-6);
    }
}

TEST_CASE("linear: values and gradients with and without bias", "[ops][matmul][linear][grad]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{2, 2});
  Tensor w = Tensor::from_vector(std::vector<double>{1, 0, 2, 0, 1, 3}, Shape{2, 3});
  Tensor bias = Tensor::from_vector(std::vector<double>{10, 20, 30}, Shape{3});
  Tensor y = Tensor::empty(Shape{2, 3}, DType::f64, Device::cpu());
  linear_forward(x, w, bias, y);
  CHECK(y.to_vector<double>() == std::vector<double>{11, 22, 38, 13, 24, 48});
  linear_forward(x, w, Tensor(), y);
  CHECK(y.to_vector<double>() == std::vector<double>{1, 2, 8, 3, 4, 18});

  Tensor x3 = test::random_tensor(Shape{2, 3, 5}, 1), w3 = test::random_tensor(Shape{5, 7}, 2);
  Tensor b3 = test::random_tensor(Shape{7}, 3);
  CHECK(test::gradcheck({x3, w3, b3}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1], in[2]); }) <
        1e-6);
  CHECK(test::gradcheck({x3, w3}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1]); }) < 1e-6);
  Tensor x1 = test::random_tensor(Shape{1, 1}, 4), w1 = test::random_tensor(Shape{1, 1}, 5);
  Tensor b1 = test::random_tensor(Shape{1}, 6);
  CHECK(test::gradcheck({x1, w1, b1}, [](Graph&, const std::vector<Expr>& in) { return linear(in[0], in[1], in[2]); }) <
        1e-6);
}

TEST_CASE("bias_grad sums the output gradient over rows", "[ops][matmul][linear]") {
  Tensor d = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  Tensor db = Tensor::from_vector(std::vector<double>{100, 200}, Shape{2});
  bias_grad(d, db);
  CHECK(db.to_vector<double>() == std::vector<double>{109, 212});
}

TEST_CASE("matmul: errors name the op and the shapes", "[ops][matmul][errors]") {
  Tensor a = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  Tensor b = Tensor::zeros(Shape{4, 5}, DType::f32, Device::cpu());
  Tensor c = Tensor::zeros(Shape{2, 5}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(matmul_forward(a, b, c), Catch::Contains("matmul") && Catch::Contains("[2,3]") &&
                                                 Catch::Contains("[4,5]"));
  Tensor b2 = Tensor::zeros(Shape{3, 5}, DType::f32, Device::cpu());
  Tensor bad = Tensor::zeros(Shape{5, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(matmul_forward(a, b2, bad), Catch::Contains("matmul") && Catch::Contains("[5,2]") &&
                                                    Catch::Contains("[2,5]"));
  CHECK_THROWS_WITH(matmul_plan(Shape{2, 3, 4}, Shape{3, 4, 5}, false, false), Catch::Contains("batch axes"));
  Tensor bias = Tensor::zeros(Shape{4}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(linear_forward(a, b2, bias, c), Catch::Contains("linear") && Catch::Contains("bias"));
  Tensor b64 = Tensor::zeros(Shape{3, 5}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(matmul_forward(a, b64, c), Catch::Contains("matmul") && Catch::Contains("f64"));
}
