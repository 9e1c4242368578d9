// Attention dropout in the CPU reference of fused attention (ops/attention_dropout.h): the output
// equals a direct computation with the same Philox keep factors, the log-sum-exp is the undropped
// one, rate 0 changes nothing, the kept share is 1 - rate, finite-difference gradients (f64) of q, k,
// v and both head_weight shapes, and the graph operator drops only in training graphs. CPU-vs-CUDA
// parity: tests/gpu/attention_parity_test.cpp; causality: tests/models/causality_test.cpp.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/attention.h"
#include "ops/attention.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
constexpr int64_t B = 2, Tq = 5, Tk = 6, H = 2, D = 3;

Tensor padding() {
  return Tensor::from_vector(std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, Shape{B, Tk}, Device::cpu(),
                             DType::u8);
}

struct Inputs {
  Tensor q = test::random_tensor(Shape{B, Tq, H, D}, 1, -2, 2), k = test::random_tensor(Shape{B, Tk, H, D}, 2, -2, 2),
         v = test::random_tensor(Shape{B, Tk, H, D}, 3), w = test::random_tensor(Shape{B, Tq, H}, 4, 0.5, 1.5);
};

std::pair<Tensor, Tensor> forward(const Inputs& in, const Tensor& w, const AttentionDropout& d, bool causal = true) {
  Tensor out = Tensor::empty(Shape{B, Tq, H, D}, DType::f64, Device::cpu());
  Tensor lse = Tensor::empty(Shape{B, H, Tq}, DType::f64, Device::cpu());
  attention_forward(in.q, in.k, in.v, padding(), causal, 0.7f, w, out, lse, d);
  return {out, lse};
}
}  // namespace

TEST_CASE("attention dropout: the output of the kept and scaled weights", "[ops][attention][dropout]") {
  const Inputs in;
  const AttentionDropout d{0.4f, 9, 3};
  const auto [out, lse] = forward(in, Tensor(), d, false);
  const auto [plain, plain_lse] = forward(in, Tensor(), AttentionDropout{}, false);
  CHECK(lse.to_vector<double>() == plain_lse.to_vector<double>());  // the undropped log-sum-exp
  const std::vector<double> q = in.q.to_vector<double>(), k = in.k.to_vector<double>(), v = in.v.to_vector<double>();
  const std::vector<double> o = out.to_vector<double>(), l = lse.to_vector<double>();
  const std::vector<uint8_t> pad = padding().to_vector<uint8_t>();
  double max_err = 0;
  int dropped = 0, kept = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t e = 0; e < D; ++e) {
          double ref = 0;
          for (int64_t j = 0; j < Tk; ++j) {
            if (!pad[static_cast<size_t>(b * Tk + j)]) continue;
            double s = 0;
            for (int64_t x = 0; x < D; ++x)
              s += q[static_cast<size_t>(((b * Tq + i) * H + h) * D + x)] *
                   k[static_cast<size_t>(((b * Tk + j) * H + h) * D + x)];
            const double p = std::exp(0.7f * s - l[static_cast<size_t>((b * H + h) * Tq + i)]);
            const double z = attention_keep(d, b, h, i, j, H, Tq, Tk);
            if (e == 0) (z == 0 ? dropped : kept)++;
            ref += p * z * v[static_cast<size_t>(((b * Tk + j) * H + h) * D + e)];
          }
          max_err = std::max(max_err, std::abs(ref - o[static_cast<size_t>(((b * Tq + i) * H + h) * D + e)]));
        }
  CHECK(max_err < 1e-5);
  CHECK(dropped > 0);
  CHECK(kept > dropped);
  CHECK(out.to_vector<double>() != plain.to_vector<double>());
}

TEST_CASE("attention dropout: rate 0 is no dropout; the kept share is 1 - rate", "[ops][attention][dropout]") {
  const Inputs in;
  CHECK(forward(in, in.w, AttentionDropout{0.f, 9, 3}).first.to_vector<double>() ==
        forward(in, in.w, AttentionDropout{}).first.to_vector<double>());
  const int64_t n = 200000;
  const AttentionDropout d{0.3f, 5, 7};
  int64_t kept = 0;
  for (int64_t j = 0; j < n; ++j) kept += attention_keep(d, 0, 0, 0, j, 1, 1, n) > 0;
  CHECK(std::abs(static_cast<double>(kept) / n - 0.7) < 4 * std::sqrt(0.21 / n));
  CHECK(attention_keep(d, 0, 0, 0, 1, 1, 1, n) == attention_keep(d, 0, 0, 0, 1, 1, 1, n));  // keyed, not stateful
  Tensor out = Tensor::empty(Shape{B, Tq, H, D}, DType::f64, Device::cpu()),
         lse = Tensor::empty(Shape{B, H, Tq}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(
      attention_forward(in.q, in.k, in.v, Tensor(), false, 1.f, Tensor(), out, lse, AttentionDropout{1.f, 1, 1}),
      Catch::Contains("dropout rate"));
}

TEST_CASE("attention dropout: finite-difference gradients with fixed masks", "[ops][attention][dropout]") {
  const Inputs in;
  const AttentionDropout d{0.35f, 4, 11};
  for (int weight = 0; weight < 3; ++weight) {
    INFO("head_weight " << weight);
    const Tensor w = weight == 0 ? Tensor() : weight == 1 ? test::random_tensor(Shape{B, H}, 5, 0.5, 1.5) : in.w;
    std::vector<Tensor> x{in.q, in.k, in.v};
    if (w.defined()) x.push_back(w);
    const std::vector<double> c = test::random_tensor(Shape{B, Tq, H, D}, 6).to_vector<double>();
    auto loss = [&](const std::vector<Tensor>& t) {
      Inputs m;
      m.q = t[0], m.k = t[1], m.v = t[2];
      return test::weighted_sum(forward(m, t.size() > 3 ? t[3] : Tensor(), d).first, c);
    };
    const auto [out, lse] = forward(in, w, d);
    std::vector<Tensor> g;
    for (const Tensor& t : x) g.push_back(Tensor::zeros(t.shape(), DType::f64, Device::cpu()));
    Tensor none;
    attention_backward(in.q, in.k, in.v, padding(), true, 0.7f, w, out, lse,
                       Tensor::from_vector(c, out.shape(), Device::cpu(), DType::f64), g[0], g[1], g[2],
                       w.defined() ? g[3] : none, d);
    double err = 0;
    for (size_t a = 0; a < x.size(); ++a) {
      const std::vector<double> analytic = g[a].to_vector<double>();
      std::vector<double> base = x[a].to_vector<double>();
      for (size_t e = 0; e < base.size(); ++e) {
        std::vector<Tensor> hi = x, lo = x;
        std::vector<double> up = base, down = base;
        up[e] += 1e-6;
        down[e] -= 1e-6;
        hi[a] = Tensor::from_vector(up, x[a].shape(), Device::cpu(), DType::f64);
        lo[a] = Tensor::from_vector(down, x[a].shape(), Device::cpu(), DType::f64);
        const double numeric = (loss(hi) - loss(lo)) / 2e-6;
        err = std::max(err, std::abs(numeric - analytic[e]) / std::max(1.0, std::abs(numeric)));
      }
    }
    CHECK(err < 1e-6);
  }
}

TEST_CASE("attention dropout: the graph operator drops in training graphs only", "[ops][attention][dropout]") {
  const Inputs in;
  auto run = [&](bool training) {
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = training, .seed = 3});
    Expr o = attention(g.input(in.q), g.input(in.k), g.input(in.v), padding(), true, 0.7f, Expr(), 0.5f);
    g.forward();
    return o.val().to_vector<double>();
  };
  CHECK(run(true) != run(false));
  CHECK(run(true) == run(true));  // the same seed and step: the same masks
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr plain = attention(g.input(in.q), g.input(in.k), g.input(in.v), padding(), true, 0.7f);
  CHECK(run(false) == plain.val().to_vector<double>());
}
