// int8 inference GEMMs (ops/int8_gemm.h): weight quantization per output channel (scales, range, rounding
// error), the int8 product of every backend against the f64 product of the f32 operands within the derived
// bound (and the bound far below the product's size, so that it can catch a wrong scale), per-row
// (transposed) weights and experts, and the ops (matmul, linear, grouped GEMM) taking the path exactly when a
// set of quantized weights holding their weight is active (two sets may be active at once: an ensemble); the
// AVX-512 activation quantizer giving the portable one's bytes.
#include "ops/int8_gemm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"
#include "ops/grouped_gemm.h"
#include "ops/matmul.h"
#include "support/gemm_backends.h"
#include "support/random_normal.h"

using namespace moe;

namespace {
// f32 weight element (e, kk, j) of the [K, N] view of expert e
float weight_at(const Tensor& w, const Int8Matrix& q, int64_t e, int64_t kk, int64_t j) {
  const float* p = w.data<float>();
  return q.per_row ? p[j * q.k() + kk] : p[(e * q.k() + kk) * q.n() + j];
}
}  // namespace

TEST_CASE("int8: weights quantized per output channel", "[ops][int8]") {
  for (bool per_row : {false, true}) {
    const Tensor w = test::random_normal(Shape{37, 21}, 1);
    const Int8Matrix q = quantize_int8(w, per_row);
    REQUIRE(q.scale.size() == size_t(per_row ? 37 : 21));
    for (int64_t j = 0; j < q.n(); ++j) {
      float amax = 0;
      int qmax = 0;
      for (int64_t kk = 0; kk < q.k(); ++kk) {
        const float v = weight_at(w, q, 0, kk, j);
        amax = std::max(amax, std::abs(v));
        const int64_t idx = per_row ? j * q.k() + kk : kk * q.n() + j;
        qmax = std::max(qmax, std::abs(int(q.q[size_t(idx)])));
        CHECK(std::abs(v - q.q[size_t(idx)] * q.scale[size_t(j)]) <= q.scale[size_t(j)] * 0.5f * (1 + 1e-5f));
      }
      CHECK(q.scale[size_t(j)] == Approx(amax / kInt8WeightMax));
      CHECK(qmax == kInt8WeightMax);  // the largest entry takes the full range (7 bits: ops/int8_gemm.h)
    }
    const Tensor back = dequantize_int8(q);
    CHECK(quantize_int8(back, per_row).q == q.q);
  }
  CHECK_THROWS_WITH(quantize_int8(test::random_normal(Shape{2, 3, 4}, 1), true), Catch::Contains("[K, N], [E, K, N]"));
}

TEST_CASE("int8: rounding to the nearest integer, ties to even (std::nearbyint's)", "[ops][int8]") {
  // One column with 63 (kInt8WeightMax) as its largest entry: scale 1, so each entry's quantized value is its rounding.
  static_assert(kInt8WeightMax == 63);
  const std::vector<float> v = {63.f,   2.5f,        3.5f,   -2.5f, -0.5f,     0.5f,        1.5f,   62.5f,
                                -62.5f, 0.49999997f, -1e-8f, 0.f,   31.50001f, -3.4999998f, 50.75f, -62.49999f};
  Tensor w = Tensor::empty(Shape{int64_t(v.size()), 1}, DType::f32, Device::cpu());
  std::copy(v.begin(), v.end(), w.data<float>());
  const Int8Matrix q = quantize_int8(w, false);
  REQUIRE(q.scale[0] == 1.f);
  for (size_t i = 0; i < v.size(); ++i) {
    INFO(v[i]);
    CHECK(int(q.q[i]) == int(std::nearbyint(v[i])));
  }
}

TEST_CASE("int8: the product within its quantization error bound", "[ops][int8]") {
  test::RestoreGemmBackend restore;
  for (CpuGemmBackend backend : test::gemm_backends()) {
    set_cpu_gemm_backend(backend);
    for (auto [m, k, n, experts, per_row] : {std::tuple{1, 64, 300, 1, false}, {200, 128, 40, 1, false},
                                             {5, 96, 500, 1, true}, {30, 64, 48, 3, false}}) {
      INFO(enum_name(backend) << " m " << m << " k " << k << " n " << n << " experts " << experts << " per_row " << per_row);
      const Tensor w = test::random_normal(experts > 1 ? Shape{experts, k, n} : per_row ? Shape{n, k} : Shape{k, n}, 2, 0.1f);
      const Tensor x = test::random_normal(Shape{m, k}, 3);
      const Int8Matrix q = quantize_int8(w, per_row);
      for (int64_t e = 0; e < experts; ++e) {
        std::vector<float> out(size_t(m * n), 1.f);
        cpu::int8_matmul(x.data<float>(), m, q, e, out.data(), e % 2 == 1);  // odd experts accumulate onto 1
        int within = 0, total = 0;
        double worst_ratio = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double exact = 0, size = 0;
            for (int64_t p = 0; p < k; ++p) {
              const double a = x.data<float>()[i * k + p], b = weight_at(w, q, e, p, j);
              exact += a * b;
              size += std::abs(a * b);
            }
            const double got = out[size_t(i * n + j)] - (e % 2 == 1 ? 1.0 : 0.0);
            const double bound = int8_error_bound(x.data<float>() + i * k, k, q, e, j);
            within += std::abs(got - exact) <= bound + 1e-5 * size + 1e-6;
            ++total;
            worst_ratio = std::max(worst_ratio, bound / size);
          }
        CHECK(within == total);
        CHECK(worst_ratio < 0.08);  // a few percent of sum |a w| (7-bit weights): a wrong scale would break it
      }
    }
  }
}

TEST_CASE("int8: matmul, linear and the grouped GEMM use an active quantized weight", "[ops][int8]") {
  const Tensor x = test::random_normal(Shape{6, 32}, 4), w = test::random_normal(Shape{32, 24}, 5, 0.2f);
  const Tensor table = test::random_normal(Shape{24, 32}, 6, 0.2f), experts = test::random_normal(Shape{2, 32, 24}, 7, 0.2f);
  Int8Weights set;
  set.add(w, quantize_int8(w, false));
  set.add(table, quantize_int8(table, true));
  set.add(experts, quantize_int8(experts, false));
  auto product = [](const Tensor& x, const Int8Matrix* q, int64_t e, int64_t rows, int64_t r0) {
    std::vector<float> y(size_t(rows * q->n()));
    cpu::int8_matmul(x.data<float>() + r0 * x.shape()[1], rows, *q, e, y.data(), false);
    return y;
  };
  Tensor y = Tensor::empty(Shape{6, 24}, DType::f32, Device::cpu());
  matmul_forward(x, w, y);
  const std::vector<float> f32 = y.to_vector<float>();
  {
    ActiveInt8Weights active(&set);
    matmul_forward(x, w, y);
    CHECK(y.to_vector<float>() == product(x, set.find(w), 0, 6, 0));
    CHECK(y.to_vector<float>() != f32);
    matmul_forward(x, table, y, false, true);  // the output layer: the table used transposed
    CHECK(y.to_vector<float>() == product(x, set.find(table), 0, 6, 0));
    const Tensor offsets = Tensor::from_vector(std::vector<int32_t>{0, 2, 6}, Shape{3});
    grouped_gemm_forward(x, experts, offsets, y, false, false);
    std::vector<float> want = product(x, set.find(experts), 0, 2, 0), second = product(x, set.find(experts), 1, 4, 2);
    want.insert(want.end(), second.begin(), second.end());
    CHECK(y.to_vector<float>() == want);
    {  // a second set (an ensemble's other model) is active beside it; each weight is found in its own set
      Int8Weights other;
      const Tensor w2 = Tensor::from_vector(w.to_vector<float>(), w.shape());
      other.add(w2, quantize_int8(w2, false));
      ActiveInt8Weights both(&other);
      CHECK(active_int8_weight(w) == set.find(w));
      CHECK(active_int8_weight(w2) == other.find(w2));
    }
    CHECK(active_int8_weight(w) == set.find(w));
  }
  matmul_forward(x, w, y);  // inactive again: f32
  CHECK(y.to_vector<float>() == f32);
}

TEST_CASE("int8: an inner dimension past exact int32 sums is refused", "[ops][int8]") {
  const int64_t k = 131000;
  const Int8Matrix q = quantize_int8(test::random_normal(Shape{k, 1}, 3), false);
  const std::vector<float> x(static_cast<size_t>(k), 1.f);
  float out = 0;
  CHECK_THROWS_WITH(cpu::int8_matmul(x.data(), 1, q, 0, &out, false), Catch::Contains("131,000"));
}

// Activations are quantized per row by a portable loop, on AVX2 by the same loop 8 lanes wide (run_wide), on AVX-512F
// 16 at a time (ops/cpu_isa.h); all round to the nearest even integer after the same product, so the bytes, and so
// the products (exact on every path: AVX2's panel kernel, ops/int8_panels.cpp, or oneDNN's with VNNI), are
// identical; AVX2's kernel also scales and accumulates as the portable loop rounds. Rows hold exact ties
// (x 127 / amax = n + 0.5), zeros, a zero row, and lengths with and without a tail of 16; the columns fill whole
// panels of 8 or not, in an odd number; the weight is used as is and transposed (per row), packed once
// (pack_int8_panels, as a model's weights are) or at the call, for the second of two experts.
TEST_CASE("int8: every instruction set gives the portable quantized products", "[ops][int8]") {
  if (!cpu_supports(CpuIsa::avx2) && !cpu_supports(CpuIsa::avx512)) {
    WARN("this CPU has neither AVX2 nor AVX-512F: only the portable loops exist here");
    return;
  }
  const CpuIsa saved = cpu_isa();
  for (int64_t k : {16, 64, 77, 5})
    for (int64_t n : {40, 37})
      for (bool per_row : {false, true}) {
        INFO("k " << k << " n " << n << " per_row " << per_row);
        const int64_t m = 7, e = per_row ? 0 : 1;
        const Tensor w = test::random_normal(per_row ? Shape{n, k} : Shape{2, k, n}, 4, 0.1f);
        Tensor x = test::random_normal(Shape{m, k}, 5);
        float* px = x.data<float>();
        for (int64_t p = 0; p < k; ++p) {
          px[p] = float(p % 9) - 4.f;  // row 0: amax 4, x 127 / 4 = x 31.75: -2 and 2 give ties (63.5)
          px[k + p] = p == 0 ? 127.f : float(p % 11) - 5.5f;  // row 1: amax 127, x 1: every other element a tie
          px[2 * k + p] = 0.f;                                // row 2: zero, scale 0
        }
        const std::vector<float> start = test::random_normal(Shape{m, n}, 6).to_vector<float>();
        auto product = [&](const Int8Matrix& q, bool accumulate) {
          std::vector<float> y = accumulate ? start : std::vector<float>(size_t(m * n));
          cpu::int8_matmul(px, m, q, e, y.data(), accumulate);
          return y;
        };
        Int8Matrix q = quantize_int8(w, per_row);
        set_cpu_isa(CpuIsa::portable);
        const std::vector<float> plain = product(q, false), added = product(q, true);
        for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
          if (!cpu_supports(isa)) continue;
          set_cpu_isa(isa);
          INFO(enum_name(isa));
          q.panels.clear();
          CHECK(product(q, false) == plain);
          pack_int8_panels(q);
          CHECK(q.panels.empty() == !cpu::s8_panels_run());
          CHECK(product(q, false) == plain);
          CHECK(product(q, true) == added);
        }
        set_cpu_isa(saved);
      }
}
