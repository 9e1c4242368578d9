// Fused attention on the CPU: hand-computed values (2 keys), masks (causal with Tq != Tk, padding,
// fully masked rows), finite-difference gradients in f64 for q, k, v and both head_weight shapes
// (Hk = 1 and Hk = H, T not a multiple of 32), attention_flops and error messages; f32 on the AVX-512 rows and
// on the portable ones, both against f64 (ops/cpu_isa.h).
#include "graph/expr/attention.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "ops/cpu_isa.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
struct Run {
  std::vector<double> out, lse;
};
Run run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pad, bool causal, float scale,
        const Tensor& w = {}) {
  Tensor out = Tensor::empty(q.shape(), q.dtype(), Device::cpu());
  Tensor lse = Tensor::empty(Shape{q.shape()[0], q.shape()[2], q.shape()[1]}, attention_lse_dtype(q.dtype()),
                             Device::cpu());
  attention_forward(q, k, v, pad, causal, scale, w, out, lse);
  return {out.to_vector<double>(), lse.to_vector<double>()};
}
Tensor t64(std::vector<double> v, Shape s) { return Tensor::from_vector(v, s); }
Tensor mask(std::vector<int32_t> m, Shape s) { return Tensor::from_vector(m, s, Device::cpu(), DType::u8); }

struct Case {
  int64_t B, Tq, Tk, H, Hk, D;
  bool causal, pad;
  int weight;  // 0 none, 1 [B,H], 2 [B,Tq,H]
};
std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "B=" << c.B << " Tq=" << c.Tq << " Tk=" << c.Tk << " H=" << c.H << " Hk=" << c.Hk << " D=" << c.D
            << " causal=" << c.causal << " pad=" << c.pad << " weight=" << c.weight;
}
/// q, k, v and the head weights (if any) of a case, random f64.
std::vector<Tensor> case_inputs(const Case& c, uint32_t& seed) {
  std::vector<Tensor> in{test::random_tensor(Shape{c.B, c.Tq, c.H, c.D}, ++seed, -1.5, 1.5),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, ++seed, -1.5, 1.5),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, ++seed, -1, 1)};
  if (c.weight == 1) in.push_back(test::random_tensor(Shape{c.B, c.H}, ++seed, -1, 1));
  if (c.weight == 2) in.push_back(test::random_tensor(Shape{c.B, c.Tq, c.H}, ++seed, -1, 1));
  return in;
}
/// With c.pad, the last key of batch 0 and the first of the last batch are padding.
Tensor case_padding(const Case& c) {
  if (!c.pad) return {};
  std::vector<int32_t> m(static_cast<size_t>(c.B * c.Tk), 1);
  m[static_cast<size_t>(c.Tk - 1)] = 0;
  m[static_cast<size_t>((c.B - 1) * c.Tk)] = 0;
  return mask(m, Shape{c.B, c.Tk});
}
}  // namespace

TEST_CASE("attention: two keys by hand", "[ops][attention]") {
  // q = [1, 0], keys [1, 0] and [0, 2] (scale 1): scores 1 and 0; v = [10, 1] and [20, 3].
  Tensor q = t64({1, 0}, Shape{1, 1, 1, 2});
  Tensor k = t64({1, 0, 0, 2}, Shape{1, 2, 1, 2});
  Tensor v = t64({10, 1, 20, 3}, Shape{1, 2, 1, 2});
  const double e = std::exp(1.0), p0 = e / (e + 1), p1 = 1 / (e + 1);
  Run r = run(q, k, v, {}, false, 1.f);
  CHECK(r.out[0] == Approx(10 * p0 + 20 * p1));
  CHECK(r.out[1] == Approx(1 * p0 + 3 * p1));
  CHECK(r.lse[0] == Approx(std::log(e + 1)));
  // Scale 2: scores 2 and 0.
  r = run(q, k, v, {}, false, 2.f);
  const double e2 = std::exp(2.0);
  CHECK(r.out[0] == Approx((10 * e2 + 20) / (e2 + 1)));
  // Padding hides key 0: o = v1. A head weight of 0.5 halves it.
  r = run(q, k, v, mask({0, 1}, Shape{1, 2}), false, 1.f, t64({0.5}, Shape{1, 1}));
  CHECK(r.out == std::vector<double>{10, 1.5});
  CHECK(r.lse[0] == Approx(0.0).margin(1e-12));
  // Causal with Tq = 1, Tk = 2 (decoding): the single query sees both keys.
  r = run(q, k, v, {}, true, 1.f);
  CHECK(r.out[0] == Approx(10 * p0 + 20 * p1));
}

TEST_CASE("attention: causal masks, Tq != Tk, fully masked rows give 0", "[ops][attention]") {
  // Tq = Tk = 2 causal: query 0 sees key 0 only.
  Tensor q = t64({1, 0, 0, 1}, Shape{1, 2, 1, 2});
  Tensor k = t64({1, 0, 0, 2}, Shape{1, 2, 1, 2});
  Tensor v = t64({10, 1, 20, 3}, Shape{1, 2, 1, 2});
  Run r = run(q, k, v, {}, true, 1.f);
  CHECK(r.out[0] == 10);
  CHECK(r.out[1] == 1);
  CHECK(r.out[2] == Approx((10 + 20 * std::exp(2.0)) / (1 + std::exp(2.0))));
  // Tq = 2 > Tk = 1 causal: query 0 sees key j <= 0 + (1 - 2) = -1: none (o = 0, lse = -inf).
  Tensor k1 = t64({1, 0}, Shape{1, 1, 1, 2}), v1 = t64({5, 6}, Shape{1, 1, 1, 2});
  r = run(q, k1, v1, {}, true, 1.f);
  CHECK(r.out == std::vector<double>{0, 0, 5, 6});
  CHECK(std::isinf(r.lse[0]));
  CHECK(r.lse[0] < 0);
  // All keys padded: zero output, no NaN, and zero gradients.
  r = run(q, k, v, mask({0, 0}, Shape{1, 2}), false, 1.f);
  CHECK(r.out == std::vector<double>{0, 0, 0, 0});
  CHECK(test::gradcheck({q, k, v}, [&](Graph&, const std::vector<Expr>& in) {
          return attention(in[0], in[1], in[2], mask({0, 0}, Shape{1, 2}), false, 1.f);
        }) < 1e-9);
}

TEST_CASE("attention: finite-difference gradients", "[ops][attention][grad]") {
  const Case cases[] = {{1, 1, 1, 1, 1, 1, false, false, 0}, {2, 3, 5, 2, 2, 3, false, true, 0},
                        {2, 4, 4, 2, 1, 3, true, true, 1},   {1, 5, 3, 4, 2, 2, true, false, 2},
                        {2, 3, 6, 2, 1, 4, true, true, 2},   {1, 33, 33, 1, 1, 2, true, false, 1}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    INFO(c);
    const std::vector<Tensor> in = case_inputs(c, seed);
    const Tensor pad = case_padding(c);
    const bool causal = c.causal;
    const double err = test::gradcheck(in, [&](Graph&, const std::vector<Expr>& x) {
      return attention(x[0], x[1], x[2], pad, causal, 0.8f, x.size() > 3 ? x[3] : Expr());
    });
    CHECK(err < 1e-6);
  }
}

TEST_CASE("attention: flops", "[ops][attention]") {
  CHECK(attention_flops(2, 3, 4, 4, 8, false, false) == 2.0 * 2 * 2 * 3 * 16 * 8);
  CHECK(attention_flops(1, 1, 4, 4, 1, true, true) == 5.0 * 2 * 10);  // 1+2+3+4 visible pairs
  CHECK(attention_flops(1, 1, 1, 4, 1, true, false) == 2.0 * 2 * 4);  // decoding: the query sees all keys
}

TEST_CASE("attention: errors name the op and the shapes", "[ops][attention][errors]") {
  Tensor q = Tensor::zeros(Shape{2, 3, 4, 8}, DType::f32, Device::cpu());
  Tensor k = Tensor::zeros(Shape{2, 5, 3, 8}, DType::f32, Device::cpu());
  Tensor out = Tensor::empty(q.shape(), DType::f32, Device::cpu());
  Tensor lse = Tensor::empty(Shape{2, 4, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(attention_forward(q, k, k, {}, false, 1.f, {}, out, lse),
                    Catch::Contains("attention") && Catch::Contains("[2,5,3,8]") && Catch::Contains("multiple"));
  Tensor k2 = Tensor::zeros(Shape{2, 5, 2, 8}, DType::f32, Device::cpu());
  Tensor w = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(attention_forward(q, k2, k2, {}, false, 1.f, w, out, lse),
                    Catch::Contains("attention") && Catch::Contains("head_weight") && Catch::Contains("[2,3]"));
  Tensor pad = Tensor::zeros(Shape{2, 4}, DType::u8, Device::cpu());
  CHECK_THROWS_WITH(attention_forward(q, k2, k2, pad, false, 1.f, {}, out, lse),
                    Catch::Contains("key_padding") && Catch::Contains("[2,4]") && Catch::Contains("[2,5]"));
  Tensor big = Tensor::zeros(Shape{1, 1, 1, 300}, DType::f32, Device::cpu());
  Tensor bo = Tensor::empty(big.shape(), DType::f32, Device::cpu());
  Tensor bl = Tensor::empty(Shape{1, 1, 1}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(attention_forward(big, big, big, {}, false, 1.f, {}, bo, bl), Catch::Contains("256"));
}

namespace {
/// k[rows[b, j], j] for every (b, j) of a [R, C, Hk, D] cache: the keys its row table names, as [B, Tk, Hk, D].
Tensor gather_cache(const Tensor& store, const std::vector<int32_t>& rows, int64_t B, int64_t Tk, DType dt) {
  const Shape& s = store.shape();
  const int64_t width = s[2] * s[3];
  const std::vector<double> src = store.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(B * Tk * width));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < Tk; ++j)
      for (int64_t x = 0; x < width; ++x)
        out[static_cast<size_t>((b * Tk + j) * width + x)] =
            src[static_cast<size_t>((rows[static_cast<size_t>(b * Tk + j)] * s[1] + j) * width + x)];
  return Tensor::from_vector(out, Shape{B, Tk, s[2], s[3]}, Device::cpu(), dt);
}
}  // namespace

// A decoding cache (lib/layers/kv_cache.h): storage [R, C, Hk, D] with a row table; attention through the table
// equals attention over the keys it names, bit for bit (the same sums in the same order), in f64 and in f32 (on
// the AVX-512 rows where the CPU has them), for one query and for a causal pair, with padding and head weights.
TEST_CASE("attention: a decoding cache's row table reads the keys it names", "[ops][attention]") {
  const int64_t R = 5, C = 12, Hk = 2, H = 4, D = 20, B = 3, Tk = 9;
  std::vector<int32_t> rows(static_cast<size_t>(B * Tk));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>((i * 7 + i / 5) % R);
  const Tensor table = Tensor::from_vector(rows, Shape{B, Tk});
  uint32_t seed = 500;
  for (DType dt : {DType::f64, DType::f32})
    for (int64_t Tq : {1, 2}) {
      INFO(dtype_name(dt) << " Tq=" << Tq);
      auto as = [dt](const Tensor& t) {
        return Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cpu(), dt);
      };
      const Tensor k = as(test::random_tensor(Shape{R, C, Hk, D}, ++seed, -1.5, 1.5));
      const Tensor v = as(test::random_tensor(Shape{R, C, Hk, D}, ++seed, -1, 1));
      const Tensor q = as(test::random_tensor(Shape{B, Tq, H, D}, ++seed, -1.5, 1.5));
      const Tensor w = as(test::random_tensor(Shape{B, H}, ++seed, -1, 1));
      std::vector<int32_t> m(static_cast<size_t>(B * Tk), 1);
      m[3] = m[static_cast<size_t>(Tk + 8)] = 0;
      const Tensor pad = mask(m, Shape{B, Tk});
      const Run want = run(q, gather_cache(k, rows, B, Tk, dt), gather_cache(v, rows, B, Tk, dt), pad, Tq > 1, 0.3f, w);
      Tensor out = Tensor::empty(q.shape(), dt, Device::cpu());
      Tensor lse = Tensor::empty(Shape{B, H, Tq}, attention_lse_dtype(dt), Device::cpu());
      attention_forward(q, k, v, pad, Tq > 1, 0.3f, w, out, lse, {}, table);
      CHECK(out.to_vector<double>() == want.out);
      CHECK(lse.to_vector<double>() == want.lse);
    }
  Tensor q = Tensor::zeros(Shape{B, 1, H, D}, DType::f32, Device::cpu());
  Tensor k = Tensor::zeros(Shape{R, C, Hk, D}, DType::f32, Device::cpu());
  Tensor out = Tensor::empty(q.shape(), DType::f32, Device::cpu());
  Tensor lse = Tensor::empty(Shape{B, H, 1}, DType::f32, Device::cpu());
  rows[4] = R;
  CHECK_THROWS_WITH(
      attention_forward(q, k, k, {}, false, 1.f, {}, out, lse, {}, Tensor::from_vector(rows, Shape{B, Tk})),
      Catch::Contains("key_rows entry 5 at position 4") && Catch::Contains("5 rows"));
  const Tensor long_table = Tensor::from_vector(std::vector<int32_t>(B * (C + 1), 0), Shape{B, C + 1});
  CHECK_THROWS_WITH(attention_forward(q, k, k, {}, false, 1.f, {}, out, lse, {}, long_table),
                    Catch::Contains("key_rows") && Catch::Contains("12 columns"));
  CHECK_THROWS_WITH(attention_forward(q, k, k, {}, false, 1.f, {}, out, lse, AttentionDropout{0.1f, 1, 1}, table),
                    Catch::Contains("no attention dropout"));
}

// The hand-vectorised row loops of each wider set (scores by 16 or 8 lanes, the weighted sums in registers, masked
// tails) compute what the portable ones do: forward and backward in f32 on each, against the same inputs in f64.
// Shapes of decoding (one query, many keys), of training (causal, Tq = Tk up to 40), head sizes with and without a
// tail of 16 and of 8 (and D 3: a tail alone), grouped heads, padding and both head-weight shapes; the gradients
// added to 0.25.
TEST_CASE("f32 attention: every instruction set's rows equal the portable ones", "[ops][attention]") {
  std::vector<CpuIsa> wider;
  for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512})
    if (cpu_supports(isa)) wider.push_back(isa);
  if (wider.empty()) {
    WARN("this CPU has neither AVX2 nor AVX-512F: only the portable rows exist here");
    return;
  }
  const Case cases[] = {{2, 1, 37, 8, 8, 64, false, true, 1}, {2, 19, 19, 4, 2, 20, true, true, 2},
                        {1, 5, 70, 2, 1, 80, true, false, 0}, {3, 4, 9, 2, 2, 16, false, false, 0},
                        {2, 6, 6, 2, 2, 12, true, false, 0},  {1, 3, 3, 1, 1, 3, true, false, 0},
                        {3, 9, 11, 2, 2, 16, false, true, 0}, {2, 8, 8, 1, 1, 3, true, false, 1},
                        {1, 40, 40, 2, 2, 8, true, false, 0}};
  const CpuIsa saved = cpu_isa();
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(c);
    std::vector<Tensor> in64 = case_inputs(c, seed);  // q, k, v, [head weights]
    in64.insert(in64.begin() + 3, test::random_tensor(Shape{c.B, c.Tq, c.H, c.D}, ++seed, -1, 1));  // dout
    const Tensor pad = case_padding(c);
    // out, lse, dq, dk, dv (and dhead_weight) of one run, as doubles
    auto results = [&](DType dt) {
      std::vector<Tensor> x;
      for (const Tensor& t : in64)
        x.push_back(Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cpu(), dt));
      const Tensor w = x.size() > 4 ? x[4] : Tensor();
      Tensor out = Tensor::empty(x[0].shape(), dt, Device::cpu());
      Tensor lse = Tensor::empty(Shape{c.B, c.H, c.Tq}, attention_lse_dtype(dt), Device::cpu());
      attention_forward(x[0], x[1], x[2], pad, c.causal, 0.7f, w, out, lse);
      auto start = [&](const Shape& s) {  // the backward adds to its gradients: start them away from zero
        return Tensor::from_vector(std::vector<double>(size_t(s.numel()), 0.25), s, Device::cpu(), dt);
      };
      Tensor dq = start(x[0].shape()), dk = start(x[1].shape()), dv = start(x[2].shape());
      Tensor dw = w.defined() ? start(w.shape()) : Tensor();
      attention_backward(x[0], x[1], x[2], pad, c.causal, 0.7f, w, out, lse, x[3], dq, dk, dv, dw);
      std::vector<std::vector<double>> r{out.to_vector<double>(), lse.to_vector<double>(), dq.to_vector<double>(),
                                         dk.to_vector<double>(), dv.to_vector<double>()};
      if (dw.defined()) r.push_back(dw.to_vector<double>());
      return r;
    };
    const auto want = results(DType::f64);
    set_cpu_isa(CpuIsa::portable);
    std::vector<std::vector<std::vector<double>>> got{results(DType::f32)};  // portable, then each wider set
    for (CpuIsa isa : wider) {
      set_cpu_isa(isa);
      got.push_back(results(DType::f32));
    }
    set_cpu_isa(saved);
    const char* names[] = {"out", "lse", "dq", "dk", "dv", "dhead_weight"};
    for (size_t v = 0; v < got.size(); ++v)
      for (size_t r = 0; r < want.size(); ++r) {
        INFO((v == 0 ? "portable" : enum_name(wider[v - 1])) << " " << names[r]);
        double worst = 0;
        for (size_t i = 0; i < want[r].size(); ++i) {
          if (std::isinf(want[r][i])) {  // a fully masked row's lse
            CHECK(got[v][r][i] == want[r][i]);
            continue;
          }
          worst = std::max(worst, std::abs(got[v][r][i] - want[r][i]));
        }
        CHECK(worst < 2e-5);
      }
  }
}

// A row's result does not depend on how many padded keys the batch adds (the scores of 8 keys on AVX2, 16 on
// AVX-512, are reduced together, a lone key by itself, in the same order; the probabilities' sum puts key j in lane
// j mod 8: ops/attention_cpu.cpp, cpu_math.h's row_sum): 11 keys alone and the same 11 followed by 5 padded ones (so
// keys 8-10 fall in a block of 8, and all 16 in one of 16) give the same bits, on every instruction set, in f32, for
// one query and for 8 (16 rows of 2 heads).
TEST_CASE("f32 attention: padding keys leave a row's bits as they are", "[ops][attention]") {
  const CpuIsa saved = cpu_isa();
  const int64_t H = 2, D = 40, kept = 11, padded = 16;
  const Tensor q = test::random_tensor(Shape{1, 8, H, D}, 7, -1.5, 1.5);
  const Tensor k = test::random_tensor(Shape{1, padded, H, D}, 8, -1.5, 1.5);
  const Tensor v = test::random_tensor(Shape{1, padded, H, D}, 9, -1, 1);
  auto f32 = [](const Tensor& t, int64_t keys) {  // the first `keys` entries of axis 1
    const std::vector<double> all = t.to_vector<double>();
    const int64_t row = t.numel() / t.shape()[1];
    return Tensor::from_vector(std::vector<double>(all.begin(), all.begin() + keys * row),
                               Shape{1, keys, t.shape()[2], t.shape()[3]}, Device::cpu(), DType::f32);
  };
  std::vector<int32_t> m(static_cast<size_t>(padded), 0);
  std::fill(m.begin(), m.begin() + kept, 1);
  for (CpuIsa isa : {CpuIsa::portable, CpuIsa::avx2, CpuIsa::avx512})
    for (int64_t queries : {1, 8}) {
      if (!cpu_supports(isa)) continue;
      INFO(enum_name(isa) << " queries " << queries);
      set_cpu_isa(isa);
      const Tensor q32 = f32(q, queries);
      const Run alone = run(q32, f32(k, kept), f32(v, kept), Tensor(), false, 0.5f);
      const Run with_pad = run(q32, f32(k, padded), f32(v, padded), mask(m, Shape{1, padded}), false, 0.5f);
      CHECK(alone.out == with_pad.out);
      CHECK(alone.lse == with_pad.lse);
    }
  set_cpu_isa(saved);
}
