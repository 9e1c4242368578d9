// Grouped (per-expert) GEMM on the CPU: values against a naive per-row loop and against a loop of
// dense matmuls over experts, with empty segments and odd sizes; finite-difference gradients
// (f64) for x and w, both layouts of w; the fused epilogue act(alpha x @ w + bias[e]) against the
// separate ops and by finite differences (x, w, bias; relu, alpha, empty experts); offset, shape and
// epilogue errors.
#include "graph/expr/grouped_gemm.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "ops/matmul.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor make_offsets(const std::vector<int32_t>& v) {
  return Tensor::from_vector(v, Shape{int64_t(v.size())}, Device::cpu(), DType::i32);
}
// out[r, j] = sum_k x[r, k] * w[e(r)][k, j] (w[e(r)][j, k] with trans_w), e(r) from the offsets.
std::vector<double> naive(const Tensor& x, const Tensor& w, const std::vector<int32_t>& off, bool trans_w) {
  const auto vx = x.to_vector<double>(), vw = w.to_vector<double>();
  const int64_t n = x.shape()[0], k = x.shape()[1], m = trans_w ? w.shape()[1] : w.shape()[2];
  std::vector<double> out(size_t(n * m));
  for (size_t e = 0; e + 1 < off.size(); ++e)
    for (int64_t r = off[e]; r < off[e + 1]; ++r)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += vx[r * k + q] * vw[e * k * m + (trans_w ? j * k + q : q * m + j)];
        out[r * m + j] = s;
      }
  return out;
}
}  // namespace

TEST_CASE("grouped_gemm: hand-computed values", "[ops][grouped_gemm]") {
  // Two experts, rows {0} and {1, 2}; K = 2, M = 1.
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  Tensor w = Tensor::from_vector(std::vector<double>{1, 1, 10, -1}, Shape{2, 2, 1});
  Tensor out = Tensor::empty(Shape{3, 1}, DType::f64, Device::cpu());
  grouped_gemm_forward(x, w, make_offsets({0, 1, 3}), out);
  CHECK(out.to_vector<double>() == std::vector<double>{3, 26, 44});
}

TEST_CASE("grouped_gemm: naive loop and a loop of matmuls, with empty segments", "[ops][grouped_gemm]") {
  const std::vector<int32_t> offs[] = {{0, 0, 5, 5, 17, 37, 37}, {0, 37}, {0, 0, 0}, {0, 1, 2, 3}};
  uint32_t seed = 10;
  for (const auto& off : offs)
    for (bool trans_w : {false, true}) {
      const int64_t n = off.back(), e = int64_t(off.size()) - 1, k = 19, m = 33;
      INFO("experts " << e << " rows " << n << " trans_w " << trans_w);
      Tensor x = test::random_tensor(Shape{n, k}, seed++);
      Tensor w = test::random_tensor(trans_w ? Shape{e, m, k} : Shape{e, k, m}, seed++);
      for (DType dt : {DType::f64, DType::f32}) {
        Tensor xd = Tensor::from_vector(x.to_vector<double>(), x.shape(), Device::cpu(), dt);
        Tensor wd = Tensor::from_vector(w.to_vector<double>(), w.shape(), Device::cpu(), dt);
        Tensor out = test::random_tensor(Shape{n, m}, seed++, -1, 1, dt);  // overwritten
        grouped_gemm_forward(xd, wd, make_offsets(off), out, trans_w);
        const auto ref = naive(x, w, off, trans_w), got = out.to_vector<double>();
        for (size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == Approx(ref[i]).margin(dt == DType::f64 ? 1e-12 : 1e-5));
      }
      // The same through dense matmul per expert.
      Tensor out = Tensor::empty(Shape{n, m}, DType::f64, Device::cpu());
      grouped_gemm_forward(x, w, make_offsets(off), out, trans_w);
      for (int64_t i = 0; i < e; ++i) {
        const int64_t rows = off[i + 1] - off[i];
        if (rows == 0) continue;
        Tensor dense = Tensor::empty(Shape{rows, m}, DType::f64, Device::cpu());
        matmul_forward(x.rows(off[i], rows), w.rows(i, 1).view(trans_w ? Shape{m, k} : Shape{k, m}), dense, false,
                       trans_w);
        CHECK(out.rows(off[i], rows).to_vector<double>() == dense.to_vector<double>());
      }
    }
}

TEST_CASE("grouped_gemm: accumulate adds into the output", "[ops][grouped_gemm]") {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2}, Shape{2, 1});
  Tensor w = Tensor::from_vector(std::vector<double>{3, 5}, Shape{2, 1, 1});
  Tensor out = Tensor::from_vector(std::vector<double>{100, 200}, Shape{2, 1});
  grouped_gemm_forward(x, w, make_offsets({0, 1, 2}), out, false, true);
  CHECK(out.to_vector<double>() == std::vector<double>{103, 210});
}

TEST_CASE("grouped_gemm: finite-difference gradients", "[ops][grouped_gemm][grad]") {
  const std::vector<int32_t> off{0, 3, 3, 8, 9};
  Tensor offsets = make_offsets(off);
  for (bool trans_w : {false, true}) {
    INFO("trans_w " << trans_w);
    Tensor x = test::random_tensor(Shape{9, 5}, 21);
    Tensor w = test::random_tensor(trans_w ? Shape{4, 3, 5} : Shape{4, 5, 3}, 22);
    CHECK(test::gradcheck({x, w, offsets}, [=](Graph&, const std::vector<Expr>& in) {
            return grouped_matmul(in[0], in[1], in[2], trans_w);
          }, 1e-6, {0, 1}) < 1e-6);
  }
  // Backward leaves an empty expert's weight gradient at zero.
  Tensor x = test::random_tensor(Shape{9, 5}, 23), w = test::random_tensor(Shape{4, 5, 3}, 24);
  Tensor dout = test::random_tensor(Shape{9, 3}, 25);
  Tensor dx = Tensor::zeros(x.shape(), DType::f64, Device::cpu()), dw = Tensor::zeros(w.shape(), DType::f64, Device::cpu());
  grouped_gemm_backward(x, w, offsets, dout, dx, dw);
  for (double v : dw.rows(1, 1).to_vector<double>()) CHECK(v == 0);
}

TEST_CASE("grouped_gemm: the fused epilogue equals scale, bias gather and relu", "[ops][grouped_gemm][epilogue]") {
  const std::vector<int32_t> off{0, 0, 5, 5, 17, 38};
  const int64_t n = off.back(), e = int64_t(off.size()) - 1, k = 19, m = 33;
  uint32_t seed = 40;
  for (bool trans_w : {false, true})
    for (bool bias : {false, true})
      for (GroupedActivation act : {GroupedActivation::none, GroupedActivation::relu})
        for (float alpha : {1.f, 0.625f}) {
          INFO("trans_w " << trans_w << " bias " << bias << " relu " << (act == GroupedActivation::relu) << " alpha "
                          << alpha);
          Tensor x = test::random_tensor(Shape{n, k}, seed++);
          Tensor w = test::random_tensor(trans_w ? Shape{e, m, k} : Shape{e, k, m}, seed++);
          Tensor b = test::random_tensor(Shape{e, m}, seed++);
          const auto ref = naive(x, w, off, trans_w), vb = b.to_vector<double>();
          for (DType dt : {DType::f64, DType::f32}) {
            auto as = [&](const Tensor& t) {
              return Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cpu(), dt);
            };
            Tensor out = test::random_tensor(Shape{n, m}, seed++, -1, 1, dt);  // overwritten
            grouped_gemm_forward(as(x), as(w), make_offsets(off), out, trans_w, false,
                                 GroupedEpilogue{alpha, bias ? as(b) : Tensor(), act});
            const auto got = out.to_vector<double>();
            for (size_t ex = 0; ex + 1 < off.size(); ++ex)
              for (int64_t r = off[ex]; r < off[ex + 1]; ++r)
                for (int64_t j = 0; j < m; ++j) {
                  double v = alpha * ref[size_t(r * m + j)] + (bias ? vb[ex * size_t(m) + size_t(j)] : 0.0);
                  if (act == GroupedActivation::relu) v = std::max(v, 0.0);
                  CHECK(got[size_t(r * m + j)] == Approx(v).margin(dt == DType::f64 ? 1e-12 : 1e-5));
                }
          }
        }
}

TEST_CASE("grouped_gemm: the fused epilogue's finite-difference gradients", "[ops][grouped_gemm][epilogue][grad]") {
  const std::vector<int32_t> off{0, 3, 3, 8, 9};  // expert 1 is empty: its bias gradient stays 0
  Tensor offsets = make_offsets(off);
  uint32_t seed = 60;
  for (bool trans_w : {false, true})
    for (GroupedActivation act : {GroupedActivation::none, GroupedActivation::relu})
      for (float alpha : {1.f, 0.75f}) {
        INFO("trans_w " << trans_w << " relu " << (act == GroupedActivation::relu) << " alpha " << alpha);
        Tensor x = test::random_tensor(Shape{9, 5}, seed++);
        Tensor w = test::random_tensor(trans_w ? Shape{4, 3, 5} : Shape{4, 5, 3}, seed++);
        Tensor b = test::random_tensor(Shape{4, 3}, seed++);
        auto build = [=](Graph&, const std::vector<Expr>& in) {
          return grouped_matmul(in[0], in[1], in[2], trans_w, GroupedMatmulEpilogue{alpha, in[3], act});
        };
        CHECK(test::gradcheck({x, w, offsets, b}, build, 1e-6, {0, 1, 3}) < 1e-6);
        // Without a bias, and with the bias alone taking a gradient.
        CHECK(test::gradcheck(
                  {x, w, offsets},
                  [=](Graph&, const std::vector<Expr>& in) {
                    return grouped_matmul(in[0], in[1], in[2], trans_w, GroupedMatmulEpilogue{alpha, Expr(), act});
                  },
                  1e-6, {0, 1}) < 1e-6);
        CHECK(test::gradcheck({x, w, offsets, b}, build, 1e-6, {3}) < 1e-6);
      }
  // The relu mask comes from the output and an empty expert's bias gradient is zero.
  Tensor out = Tensor::from_vector(std::vector<double>{1, -1, 0, 2, 3, -4}, Shape{3, 2});
  Tensor dout = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  Tensor dz = Tensor::empty(Shape{3, 2}, DType::f64, Device::cpu());
  Tensor dbias = Tensor::from_vector(std::vector<double>{10, 10, 10, 10, 10, 10}, Shape{3, 2});
  grouped_gemm_epilogue_backward(out, dout, make_offsets({0, 1, 1, 3}), GroupedActivation::relu, dz, dbias);
  CHECK(dz.to_vector<double>() == std::vector<double>{1, 0, 0, 4, 5, 0});
  CHECK(dbias.to_vector<double>() == std::vector<double>{11, 10, 10, 10, 15, 14});
}

TEST_CASE("grouped_gemm: errors name the op, offsets and shapes", "[ops][grouped_gemm][errors]") {
  Tensor x = Tensor::zeros(Shape{4, 3}, DType::f32, Device::cpu());
  Tensor w = Tensor::zeros(Shape{2, 3, 5}, DType::f32, Device::cpu());
  Tensor out = Tensor::zeros(Shape{4, 5}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(grouped_gemm_forward(x, w, make_offsets({0, 3, 2}), out), Catch::Contains("grouped_gemm") &&
                                                                                 Catch::Contains("offsets"));
  CHECK_THROWS_WITH(grouped_gemm_forward(x, w, make_offsets({0, 4}), out), Catch::Contains("[3]"));
  CHECK_THROWS_WITH(grouped_gemm_forward(x, w, make_offsets({0, 2, 4}), out, true),
                    Catch::Contains("grouped_gemm") && Catch::Contains("[4,3]") && Catch::Contains("[2,3,5]"));
  const Tensor bad_bias = Tensor::zeros(Shape{2, 4}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(
      grouped_gemm_forward(x, w, make_offsets({0, 2, 4}), out, false, false, GroupedEpilogue{1.f, bad_bias}),
      Catch::Contains("grouped_gemm") && Catch::Contains("bias") && Catch::Contains("[2,4]"));
  const Tensor bias = Tensor::zeros(Shape{2, 5}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(grouped_gemm_forward(x, w, make_offsets({0, 2, 4}), out, false, true, GroupedEpilogue{1.f, bias}),
                    Catch::Contains("accumulate"));
}
