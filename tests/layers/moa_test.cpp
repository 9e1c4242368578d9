// MoA (lib/layers/moa.h): options and KkEeDd names, aux losses on a hand-computed router, the
// sparse path equal to the dense path at k = E, the grouped dispatch equal to a loop over experts
// (values and gradients), finite-difference gradients of a tiny layer, incremental decoding equal to
// full recomputation (self and cross attention), and a Transformer with type moa end to end.
#include "layers/moa.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <tuple>

#include "graph/expr/attention.h"
#include "graph/expr/binary.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "layers/sites.h"
#include "models/transformer.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
MoaOptions opts(int k, int e, int64_t dd, const std::string& dispatch = "auto") {
  MoaOptions o;
  o.k = k;
  o.experts = e;
  o.head_dim = dd;
  o.dispatch = parse_enum<MoaDispatch>(dispatch, "dispatch");
  return o;
}

/// Random f64 weights [router, q, o, k, v] for model dimension d.
std::vector<Tensor> random_weights(int64_t d, const MoaOptions& o, uint32_t seed) {
  const int64_t e = o.experts, dd = o.head_dim;
  return {test::random_tensor(Shape{d, e}, seed, -2, 2), test::random_tensor(Shape{e, d, dd}, seed + 1),
          test::random_tensor(Shape{e, dd, d}, seed + 2), test::random_tensor(Shape{d, dd}, seed + 3),
          test::random_tensor(Shape{d, dd}, seed + 4)};
}

MoaWeights as_weights(const std::vector<Expr>& l, size_t first) {
  return MoaWeights{l[first], l[first + 1], l[first + 2], l[first + 3], l[first + 4]};
}

Tensor mask(const std::vector<uint8_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }

/// Reference: every expert's map applied to every token in a loop over experts, then selected per slot
/// with one-hot masks; gates applied outside the attention op.
Expr loop_reference(Graph& g, const Expr& x, const MoaWeights& w, const MoaOptions& o, const Tensor& kp, bool causal,
                    const Tensor& qpad) {
  const Shape& s = x.shape();
  const int64_t n = s[0] * s[1], d = s[2], k = o.k, e = o.experts, dd = o.head_dim;
  Expr x2 = reshape(x, Shape{n, d});
  Expr keep;
  if (qpad.defined()) {
    std::vector<double> v;
    for (uint8_t m : qpad.to_vector<uint8_t>()) v.push_back(m);
    keep = g.input(Tensor::from_vector(v, Shape{n}));
  }
  MoaRouting r = moa_route(x2, w.router, keep, o, false);
  Expr onehot = scatter_add_last(g.input(Tensor::zeros(Shape{n * k, e}, DType::f64, Device::cpu())),
                                 reshape(r.experts, Shape{n * k, 1}),
                                 g.input(Tensor::from_vector(std::vector<double>(n * k, 1.0), Shape{n * k, 1})));
  onehot = reshape(onehot, Shape{n, k, e});
  Expr q;
  for (int64_t i = 0; i < e; ++i) {
    Expr qe = reshape(matmul(x2, reshape(slice(w.q, 0, i, 1), Shape{d, dd})), Shape{n, 1, dd});
    Expr part = mul(slice(onehot, 2, i, 1), qe);  // [n, k, D]
    q = q.defined() ? add(q, part) : part;
  }
  Expr kk = reshape(linear(x, w.k), Shape{s[0], s[1], 1, dd});
  Expr vv = reshape(linear(x, w.v), Shape{s[0], s[1], 1, dd});
  Expr att = attention(reshape(q, Shape{s[0], s[1], k, dd}), kk, vv, kp, causal, 1.0 / std::sqrt(double(dd)));
  att = mul(reshape(att, Shape{n, k, dd}), reshape(r.gates, Shape{n, k, 1}));
  Expr z;
  for (int64_t i = 0; i < e; ++i) {
    Expr ctx = sum(mul(slice(onehot, 2, i, 1), att), 1);  // [n, D]
    Expr part = matmul(ctx, reshape(slice(w.o, 0, i, 1), Shape{dd, d}));
    z = z.defined() ? add(z, part) : part;
  }
  return reshape(z, s);
}

struct Run {
  std::vector<double> out;
  std::vector<std::vector<double>> grads;
};

/// Values and gradients (seeded with fixed random weights) of build(leaves) in a training graph.
Run run(const std::vector<Tensor>& inputs, const test::Builder& build) {
  Graph g(Device::cpu());
  std::vector<Expr> leaves;
  for (const Tensor& t : inputs) leaves.push_back(g.input(t, true));
  Expr out = build(g, leaves);
  g.forward();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> seed(static_cast<size_t>(out.shape().numel()));
  for (double& v : seed) v = u(rng);
  g.backward_from(out, Tensor::from_vector(seed, out.shape(), Device::cpu(), out.dtype()));
  Run r;
  r.out = out.val().to_vector<double>();
  for (const Expr& l : leaves)
    r.grads.push_back(l.grad().defined() ? l.grad().to_vector<double>()
                                         : std::vector<double>(static_cast<size_t>(l.shape().numel()), 0.0));
  return r;
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  INFO(what << ": max abs difference " << worst);
  CHECK(worst < tol);
}

void check_runs(const Run& a, const Run& b, double tol) {
  check_close(a.out, b.out, tol, "values");
  for (size_t i = 0; i < a.grads.size(); ++i) check_close(a.grads[i], b.grads[i], tol, "gradient " + std::to_string(i));
}
}  // namespace

TEST_CASE("moa: options, KkEeDd names and errors", "[layers][moa]") {
  MoaOptions o = MoaOptions::from_yaml(YAML::Load("{type: moa, name: 16K32E256D, renormalize: detached}"), 8);
  CHECK(o.k == 16);
  CHECK(o.experts == 32);
  CHECK(o.head_dim == 256);
  CHECK(o.renormalize == MoaRenormalize::detached);
  CHECK(o.name() == "16K32E256D");
  CHECK_FALSE(o.dense());
  MoaOptions d = MoaOptions::from_yaml(YAML::Load("{type: moa, experts: 8, head_dim: 128}"), 8);
  CHECK(d.name() == "8K8E128D");
  CHECK(d.dense());
  CHECK(d.switch_loss == Approx(0.01));
  CHECK(d.z_loss == Approx(0.001));
  CHECK(d.aux_normalization == MoaAuxNormalization::sum);
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, heads: 3}"), 8),
                    Catch::Contains("model.attention.heads"));
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, name: 8x8}"), 8), Catch::Contains("8x8"));
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, name: 8K8E128D, k: 4}"), 8),
                    Catch::Contains("disagrees"));
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, experts: 4}"), 8), Catch::Contains("k (8)"));
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, k: 2, experts: 4, dispatch: dense}"), 8),
                    Catch::Contains("dense needs k == experts"));
  CHECK_THROWS_WITH(MoaOptions::from_yaml(YAML::Load("{type: moa, aux_normalization: tokens}"), 8),
                    Catch::Contains("aux_normalization"));
}

TEST_CASE("moa: aux losses on a hand-computed router", "[layers][moa]") {
  // Router = identity (d = E = 2), so the logits are the tokens: r1 = [0, ln 3] (p = 1/4, 3/4),
  // r2 = [0, ln 7] (p = 1/8, 7/8), r3 = [1, 2] padded. k = 1: both real tokens pick expert 1.
  // P = [3/8, 13/8] / 2, f = [0, 1]: switch = 2 * 13/16 = 1.625. z = mean of lse^2 over all 3 tokens.
  {
    const MoaOptions o = opts(1, 2, 2);
    Graph g(Device::cpu());
    Expr x = g.input(Tensor::from_vector(std::vector<double>{0, std::log(3.0), 0, std::log(7.0), 1, 2}, Shape{3, 2}));
    Expr w = g.input(Tensor::from_vector(std::vector<double>{1, 0, 0, 1}, Shape{2, 2}), true);
    Expr keep = g.input(Tensor::from_vector(std::vector<double>{1, 1, 0}, Shape{3}));
    MoaRouting r = moa_route(x, w, keep, o, true);
    g.forward();
    CHECK(r.experts.val().to_vector<int32_t>() == std::vector<int32_t>{1, 1, 0});
    const auto gates = r.gates.val().to_vector<double>();
    CHECK(gates[0] == Approx(0.75));
    CHECK(gates[1] == Approx(0.875));
    CHECK(gates[2] == 0.0);
    CHECK(r.switch_loss.val().item() == Approx(1.625).epsilon(1e-12));
    const double lse3 = 2 + std::log(1 + std::exp(-1.0));
    const double z = (std::pow(std::log(4.0), 2) + std::pow(std::log(8.0), 2) + lse3 * lse3) / 3;
    CHECK(r.z_loss.val().item() == Approx(z).epsilon(1e-12));
    const double aux = double(0.01f) * 1.625 + double(0.001f) * z;  // the coefficients are floats
    CHECK(r.aux.val().item() == Approx(aux).epsilon(1e-12));
  }
}

TEST_CASE("moa: the layer adds its aux loss normalised as asked", "[layers][moa]") {
  // Zero-initialised router: p = 1/2, ties pick expert 0 for every token (k = 1): switch = 2 * 1/2 = 1,
  // z = ln(2)^2. Two real tokens of three; the trainer multiplies aux terms by the batch's target tokens.
  const double raw = double(0.01f) + double(0.001f) * std::log(2.0) * std::log(2.0);
  for (const std::string norm : {"sum", "mean", "sum+flag"}) {
    INFO(norm);
    MoaOptions o = opts(1, 2, 4);
    o.aux_normalization = norm == "mean" ? MoaAuxNormalization::mean : MoaAuxNormalization::sum;
    ParameterStore store(Device::cpu(), 3);
    Graph g(Device::cpu(), &store);
    Builder b(g, "enc");
    if (norm == "sum+flag") b.context().target_tokens = 10;
    Expr x = g.input(test::random_tensor(Shape{1, 3, 6}, 5, -1, 1, DType::f32));
    const Tensor kp = mask({1, 1, 0}, 1, 3);
    Expr out = moa_attention_layer(b, {x, x, kp, false, true, nullptr}, 6, o);
    REQUIRE(b.aux_losses().size() == 1);
    CHECK(b.aux_losses()[0].name == "enc.moa.aux");
    g.forward();
    const double want = norm == "mean" ? raw : norm == "sum" ? raw / 2 : raw / 10;
    CHECK(b.aux_losses()[0].value.val().item() == Approx(want).epsilon(1e-6));
    const auto y = out.val().to_vector<double>();
    for (size_t i = 12; i < 18; ++i) CHECK(y[i] == 0.0);  // the padded query
  }
}

TEST_CASE("moa: detached renormalisation and the cv loss", "[layers][moa]") {
  MoaOptions o = opts(1, 2, 2);
  o.renormalize = MoaRenormalize::detached;
  o.cv_loss = 1.f;
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::from_vector(std::vector<double>{0, std::log(3.0), std::log(7.0), 0}, Shape{2, 2}), true);
  Expr w = g.input(Tensor::from_vector(std::vector<double>{1, 0, 0, 1}, Shape{2, 2}));
  MoaRouting r = moa_route(x, w, Expr(), o, true);
  g.forward();
  const double g0 = 0.75 / (0.75 + 1e-6), g1 = 0.875 / (0.875 + 1e-6);  // each gate renormalised by itself
  const auto gates = r.gates.val().to_vector<double>();
  CHECK(gates[0] == Approx(g0).epsilon(1e-12));
  CHECK(gates[1] == Approx(g1).epsilon(1e-12));
  CHECK(r.experts.val().to_vector<int32_t>() == std::vector<int32_t>{1, 0});
  // cv on the un-renormalised gates: c = [0.875, 0.75] / 1.625, unbiased variance over mean^2 (mean 1/2).
  MoaOptions plain = o;
  plain.renormalize = MoaRenormalize::none;
  MoaRouting rp = moa_route(x, w, Expr(), plain, true);
  g.forward();
  const double c0 = 0.875 / 1.625, c1 = 0.75 / 1.625, m = 0.5;
  const double var = (c0 - m) * (c0 - m) + (c1 - m) * (c1 - m);
  CHECK(rp.cv_loss.val().item() == Approx(var / (m * m + 1e-10)).epsilon(1e-9));
  CHECK(r.cv_loss.val().item() < 1e-10);  // renormalised single gates are all about 1: balanced
  // The denominator is detached: d gate0 / d r_0 = dp1/dr_0 / (p1 + 1e-6), dp1/dr_1 = p1 (1 - p1) = 3/16.
  g.backward_from(r.gates, Tensor::from_vector(std::vector<double>{1, 0}, Shape{2, 1}));
  const auto dx = x.grad().to_vector<double>();
  CHECK(dx[0] == Approx(-0.1875 / (0.75 + 1e-6)).epsilon(1e-12));
  CHECK(dx[1] == Approx(0.1875 / (0.75 + 1e-6)).epsilon(1e-12));
  CHECK(dx[2] == 0.0);
}

TEST_CASE("moa: weight and padding shape errors name the layer and the shapes", "[layers][moa]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  const MoaOptions o = opts(2, 3, 4);
  std::vector<Expr> w;
  for (const Tensor& x : random_weights(6, o, 1)) w.push_back(g.input(x));
  Expr x = g.input(test::random_tensor(Shape{1, 2, 5}, 2));  // d = 5, weights for d = 6
  CHECK_THROWS_WITH(moa_attention({x, x, Tensor(), false, true, nullptr}, as_weights(w, 0), o),
                    Catch::Contains("moa 2K3E4D") && Catch::Contains("[3,6,4]") && Catch::Contains("d = 5"));
  Expr x6 = g.input(test::random_tensor(Shape{1, 2, 6}, 2));
  CHECK_THROWS_WITH(moa_attention({x6, x6, Tensor(), false, true, nullptr}, as_weights(w, 0), o, mask({1, 1, 1}, 1, 3)),
                    Catch::Contains("moa: query padding [1,3]"));
}

TEST_CASE("moa: sparse path equals dense path at k = E", "[layers][moa]") {
  const int64_t b = 2, t = 5, d = 6;
  for (const std::string renorm : {"none", "detached"}) {
    INFO("renormalize " << renorm);
    const Tensor qpad = mask({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, b, t);
    std::vector<Tensor> in = {test::random_tensor(Shape{b, t, d}, 3)};
    for (const Tensor& w : random_weights(d, opts(3, 3, 4), 10)) in.push_back(w);
    auto build = [&](const std::string& dispatch) {
      return [&, dispatch](Graph&, const std::vector<Expr>& l) {
        MoaOptions o = opts(3, 3, 4, dispatch);
        o.renormalize = parse_enum<MoaRenormalize>(renorm, "renormalize");
        AttentionInput ai{l[0], l[0], qpad, false, true, nullptr};
        return moa_attention(ai, as_weights(l, 1), o, qpad).out;
      };
    };
    const Run sparse = run(in, build("sparse")), dense = run(in, build("dense"));
    check_runs(sparse, dense, 1e-12);
    for (int64_t i = 8 * d; i < 10 * d; ++i) CHECK(sparse.out[static_cast<size_t>(i)] == 0.0);  // padded queries
  }
}

TEST_CASE("moa: grouped dispatch equals a loop over experts", "[layers][moa]") {
  // k < E, T not a multiple of anything, one padded query, causal and not; and a single token.
  for (const auto& [b, t, causal] :
       std::vector<std::tuple<int64_t, int64_t, bool>>{{2, 7, false}, {2, 7, true}, {1, 1, false}, {1, 1, true}}) {
    INFO("B " << b << " T " << t << " causal " << causal);
    const int64_t d = 5;
    const MoaOptions o = opts(2, 5, 3);
    std::vector<uint8_t> m(static_cast<size_t>(b * t), 1);
    if (b * t > 1) m.back() = 0;
    const Tensor kp = causal ? Tensor() : mask(m, b, t);
    std::vector<Tensor> in = {test::random_tensor(Shape{b, t, d}, 21)};
    for (const Tensor& w : random_weights(d, o, 30)) in.push_back(w);
    const Run grouped = run(in, [&](Graph&, const std::vector<Expr>& l) {
      AttentionInput ai{l[0], l[0], kp, causal, true, nullptr};
      return moa_attention(ai, as_weights(l, 1), o, kp).out;
    });
    const Run loop = run(in, [&](Graph& g, const std::vector<Expr>& l) {
      return loop_reference(g, l[0], as_weights(l, 1), o, kp, causal, kp);
    });
    check_runs(grouped, loop, 1e-12);
  }
}

TEST_CASE("moa: finite-difference gradients of a tiny layer", "[layers][moa]") {
  const int64_t b = 2, t = 3, d = 4;
  for (const auto& [k, e] : std::vector<std::pair<int, int>>{{2, 3}, {3, 3}, {1, 1}}) {
    INFO("k " << k << " E " << e);
    MoaOptions o = opts(k, e, 3);
    // renormalize stays none: a detached denominator is by design not the true derivative.
    const Tensor kp = mask({1, 1, 1, 1, 1, 0}, b, t);
    std::vector<Tensor> in = {test::random_tensor(Shape{b, t, d}, 41), test::random_tensor(Shape{b, 4, d}, 42)};
    for (const Tensor& w : random_weights(d, o, 50)) in.push_back(w);
    const double err = test::gradcheck(in, [&](Graph&, const std::vector<Expr>& l) {
      AttentionInput ai{l[0], l[1], Tensor(), false, false, nullptr};  // cross-attention over memory l[1]
      return moa_attention(ai, as_weights(l, 2), o, kp).out;
    });
    CHECK(err < 1e-6);
    // The aux loss (switch + z) as a function of the router and the tokens.
    const double aux_err = test::gradcheck(in,
                                           [&](Graph&, const std::vector<Expr>& l) {
                                             AttentionInput ai{l[0], l[1], Tensor(), false, false, nullptr};
                                             return moa_attention(ai, as_weights(l, 2), o, kp, true).routing.aux;
                                           },
                                           1e-6, {0, 2});
    CHECK(aux_err < 1e-6);
  }
}

TEST_CASE("moa: incremental decoding equals full recomputation", "[layers][moa]") {
  const int64_t b = 2, t = 4, s = 3, d = 6;
  for (const MoaOptions& o : {opts(2, 4, 4), opts(3, 3, 5)}) {
    INFO(o.name());
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
    const Tensor xt = test::random_tensor(Shape{b, t, d}, 61), mt = test::random_tensor(Shape{b, s, d}, 62);
    const Tensor src_mask = mask({1, 1, 1, 1, 0, 0}, b, s);
    std::vector<Expr> w;
    for (const Tensor& x : random_weights(d, o, 70)) w.push_back(g.input(x));
    const MoaWeights mw = as_weights(w, 0);
    Expr x = g.input(xt), mem = g.input(mt);
    const auto self_full = moa_attention({x, x, Tensor(), true, true, nullptr}, mw, o).out.val().to_vector<double>();
    const auto cross_full =
        moa_attention({x, mem, src_mask, false, false, nullptr}, mw, o).out.val().to_vector<double>();
    KVCache self_cache, cross_cache;
    for (int64_t i = 0; i < t; ++i) {
      Expr xi = slice(x, 1, i, 1);
      const auto self_step =
          moa_attention({xi, xi, Tensor(), true, true, &self_cache}, mw, o).out.val().to_vector<double>();
      const auto cross_step = moa_attention({xi, i == 0 ? mem : Expr(), src_mask, false, false, &cross_cache}, mw, o)
                                  .out.val()
                                  .to_vector<double>();
      CHECK(self_cache.key_rows.shape() == Shape({b, i + 1}));                 // the keys so far (kv_cache.h)
      CHECK(self_cache.k.shape().with(1, 1) == Shape({b, 1, 1, o.head_dim}));  // one shared head of width D
      CHECK(cross_cache.v.shape() == Shape({b, s, 1, o.head_dim}));
      for (int64_t bb = 0; bb < b; ++bb)
        for (int64_t c = 0; c < d; ++c) {
          const size_t full = static_cast<size_t>((bb * t + i) * d + c), step = static_cast<size_t>(bb * d + c);
          CHECK(self_step[step] == Approx(self_full[full]).margin(1e-12));
          CHECK(cross_step[step] == Approx(cross_full[full]).margin(1e-12));
        }
    }
  }
}

TEST_CASE("moa: a Transformer with attention type moa trains and adds one aux loss per sublayer", "[layers][moa]") {
  TransformerConfig c;
  c.src_vocab = c.tgt_vocab = 10;
  c.d_model = 8;
  c.ffn_dim = 16;
  c.heads = 2;
  c.enc_layers = c.dec_layers = 2;
  c.dropout = 0;
  c.max_positions = 16;
  c.attention = YAML::Load("{type: moa, name: 2K3E4D}");
  Transformer net(c);
  ParameterStore store(Device::cpu(), 5);
  Graph g(Device::cpu(), &store);
  Builder bld(g);
  Tensor src = Tensor::from_vector(std::vector<int32_t>{5, 6, 7, 3, 8, 9, 3, 0}, Shape{2, 4});
  Tensor src_mask = mask({1, 1, 1, 1, 1, 1, 1, 0}, 2, 4);
  Tensor tin = Tensor::from_vector(std::vector<int32_t>{2, 4, 5, 2, 7, 8}, Shape{2, 3});
  Tensor tout = Tensor::from_vector(std::vector<int32_t>{4, 5, 3, 7, 8, 3}, Shape{2, 3});
  Expr loss = net.loss(bld, src, src_mask, tin, tout, 0.1f);
  REQUIRE(bld.aux_losses().size() == 6);  // 2 encoder self + 2 decoder self + 2 cross
  Expr total = loss;
  for (const AuxLoss& a : bld.aux_losses()) total = add(total, a.value);
  g.forward();
  // Zero router: p = 1/3, ties pick experts 0 and 1 everywhere: switch = 1, z = ln(3)^2; "sum" divides by
  // the real query tokens (7 in the encoder, 6 decoder queries).
  const double raw = double(0.01f) + double(0.001f) * std::log(3.0) * std::log(3.0);
  for (const AuxLoss& a : bld.aux_losses()) {
    INFO(a.name);
    const bool enc = a.name.rfind("encoder.", 0) == 0;
    CHECK(a.value.val().item() == Approx(raw / (enc ? 7 : 6)).epsilon(1e-6));
  }
  store.zero_grads();
  g.backward(total);
  const auto router_grad = store.grad("encoder.l0.self_attn.router.w").to_vector<float>();
  double norm = 0;
  for (float v : router_grad) norm += std::abs(v);
  CHECK(norm > 0);  // the zero-initialised router learns from the loss and the aux terms
  CHECK(store.value("decoder.l1.cross_attn.k.w").shape() == Shape({8, 4}));
}

TEST_CASE("moa: the recipes' model sections are valid MoA configurations", "[layers][moa]") {
  const std::string dir = std::string(MOE_SOURCE_DIR) + "/recipes/";
  struct Want {
    const char* file;
    const char* name;
  };
  for (const Want& w :
       {Want{"wmt14-en-de-moa-8K8E128D.yml", "8K8E128D"}, Want{"wmt14-en-de-moa-16K32E256D.yml", "16K32E256D"},
        Want{"multi30k-en-de-moa.yml", "8K8E128D"}}) {
    INFO(w.file);
    const YAML::Node model = YAML::LoadFile(dir + w.file)["model"];
    const TransformerConfig c = TransformerConfig::from_yaml(model);
    CHECK(site_type(c.attention, "mha") == "moa");
    const MoaOptions o = MoaOptions::from_yaml(c.attention, c.heads);
    CHECK(o.name() == w.name);
    CHECK(o.renormalize == MoaRenormalize::none);
    CHECK(o.aux_normalization == MoaAuxNormalization::sum);
  }
  for (const char* v : {"8K8E128D", "8K8E256D", "8K16E256D", "8K32E256D", "8K64E256D"}) {
    const YAML::Node rec = YAML::LoadFile(dir + "wikitext103-mlm-moa-" + v + ".yml");
    CHECK(rec["include"].as<std::string>() == "wikitext103-mlm-transformer.yml");
    CHECK(MoaOptions::from_yaml(rec["model"]["attention"], 8).name() == v);
  }
}
