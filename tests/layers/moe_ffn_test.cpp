// Sparsely-gated MoE layer (lib/layers/moe_ffn*): grouped-GEMM dispatch equals a loop over experts
// (values and gradients), the smooth load estimator matches Monte Carlo, the hierarchical MoE equals
// its two-level definition, finite-difference gradients through the gates (noise fixed), zero gates
// route uniformly, batchwise gating, options and the Transformer FFN site (CPU, f64 unless noted).
#include "layers/moe_ffn.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "graph/expr/binary.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/topk.h"
#include "graph/expr/unary.h"
#include "layers/sites.h"
#include "moe_router_reference.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
using Vec = std::vector<double>;

MoeOptions small_options(int n, int k, int64_t d, int64_t h) {
  MoeOptions o;
  o.dim = d, o.experts = n, o.k = k, o.hidden = h;
  return o;
}

using test::host_expert;

/// Softmax over the top k of `logits` (ties to the lower index): (expert, gate) pairs.
std::vector<std::pair<int, double>> host_top_k(const Vec& logits, int k) {
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  double z = 0;
  for (int j = 0; j < k; ++j) z += std::exp(logits[order[j]] - logits[order[0]]);
  std::vector<std::pair<int, double>> out;
  for (int j = 0; j < k; ++j) out.push_back({order[j], std::exp(logits[order[j]] - logits[order[0]]) / z});
  return out;
}

Expr flat(const Expr& x) { return reshape(x, {x.shape().numel()}); }
}  // namespace

TEST_CASE("moe: grouped-GEMM dispatch equals a loop over experts (values and gradients)", "[layers][moe]") {
  const int64_t N = 9, d = 5, h = 6;
  const int n = 4, k = 2;
  const MoeOptions opt = small_options(n, k, d, h);
  const std::vector<Tensor> inputs = {test::random_tensor(Shape{N, d}, 1), test::random_tensor(Shape{d, n}, 2),
                                      test::random_tensor(Shape{d, n}, 3), test::random_tensor(Shape{n, d, h}, 4),
                                      test::random_tensor(Shape{n, h, d}, 5)};
  const GateNoise noise{true, 17, 3};
  std::vector<Vec> y_out, grads[2];
  for (int variant = 0; variant < 2; ++variant) {
    Graph g(Device::cpu());
    std::vector<Expr> in;
    for (const Tensor& t : inputs) in.push_back(g.input(t, true));
    Expr y;
    if (variant == 0) {
      y = moe_forward(in[0], MoeWeights{in[1], in[2], {}, {}, {}, {{in[3], in[4]}, {}}}, opt, noise, {}, true).y;
    } else {
      // Reference: the same gate, then one index_select / matmul / index_add per expert.
      const TopKGate gate = noisy_top_k_gate(matmul(in[0], in[1]), matmul(in[0], in[2]), k, noise, 0.01f, false);
      const Routing r = top_k_routing(gate);
      g.forward();
      const std::vector<int32_t> expert = r.expert.val().to_vector<int32_t>();
      y = g.input(Tensor::zeros(Shape{N, d}, DType::f64, Device::cpu()));
      for (int e = 0; e < n; ++e) {
        std::vector<int32_t> pos, tok;
        for (size_t a = 0; a < expert.size(); ++a)
          if (expert[a] == e) pos.push_back(int32_t(a)), tok.push_back(int32_t(a / k));
        if (pos.empty()) continue;
        Expr p = g.input(Tensor::from_vector(pos, Shape{int64_t(pos.size())}));
        Expr t = g.input(Tensor::from_vector(tok, Shape{int64_t(tok.size())}));
        Expr hid = relu(matmul(index_select(in[0], t), reshape(slice(in[3], 0, e, 1), {d, h})));
        Expr ye = scale(matmul(hid, reshape(slice(in[4], 0, e, 1), {h, d})), float(1 / std::sqrt(double(h) / d)));
        y = index_add(y, t, ye * index_select(r.weight, p));
      }
    }
    g.forward();
    y_out.push_back(y.val().to_vector<double>());
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(-1, 1);
    Vec seed(static_cast<size_t>(N * d));
    for (double& s : seed) s = u(rng);
    g.backward_from(y, Tensor::from_vector(seed, y.shape()));
    for (const Expr& e : in) grads[variant].push_back(e.grad().to_vector<double>());
  }
  for (size_t i = 0; i < y_out[0].size(); ++i) CHECK(y_out[0][i] == Approx(y_out[1][i]).margin(1e-12));
  for (size_t j = 0; j < grads[0].size(); ++j) {
    INFO("input " << j);
    REQUIRE(grads[0][j].size() == grads[1][j].size());
    for (size_t i = 0; i < grads[0][j].size(); ++i) CHECK(grads[0][j][i] == Approx(grads[1][j][i]).margin(1e-12));
  }
}

TEST_CASE("moe: finite-difference gradients through the noisy gate and both losses", "[layers][moe][grad]") {
  for (int k : {1, 2, 4}) {
    INFO("k " << k);
    const int64_t N = 6, d = 4, h = 5;
    MoeOptions opt = small_options(4, k, d, h);
    opt.expert_bias = true;
    const std::vector<Tensor> inputs = {
        test::random_tensor(Shape{N, d}, 21),    test::random_tensor(Shape{d, 4}, 22, -2, 2),
        test::random_tensor(Shape{d, 4}, 23),    test::random_tensor(Shape{4, d, h}, 24),
        test::random_tensor(Shape{4, h, d}, 25), test::random_tensor(Shape{4, h}, 26),
        test::random_tensor(Shape{4, d}, 27)};
    auto build = [&](Graph&, const std::vector<Expr>& in) {
      MoeWeights w{in[1], in[2], {}, {}, {}, {{in[3], in[4]}, {in[5], in[6]}}};
      MoeOutput o = moe_forward(in[0], w, opt, GateNoise{true, 5, 77}, {}, true);
      std::vector<Expr> parts{flat(o.y), reshape(o.importance_loss, {1})};
      if (k < 4) parts.push_back(reshape(o.load_loss, {1}));
      return concat(parts, 0);
    };
    CHECK(test::gradcheck(inputs, build) < 1e-6);
  }
}

TEST_CASE("moe: the smooth load estimator matches a Monte-Carlo estimate", "[layers][moe]") {
  const int n = 6;
  for (int k : {1, 2, 3}) {
    INFO("k " << k);
    const Vec clean = {0.3, -0.2, 0.8, 0.1, -0.5, 0.4}, sigma = {0.7, 0.5, 0.9, 0.6, 0.8, 0.4};
    const Vec eps = {0.5, 1.2, -0.8, 0.3, 0.9, -1.1};
    Vec noisy(n);
    for (int i = 0; i < n; ++i) noisy[i] = clean[i] + eps[i] * sigma[i];
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
    Expr c = g.input(Tensor::from_vector(clean, Shape{1, n})), s = g.input(Tensor::from_vector(sigma, Shape{1, n}));
    Expr h = g.input(Tensor::from_vector(noisy, Shape{1, n}));
    const Vec p = prob_in_top_k(c, h, s, topk(h, k + 1).values).val().to_vector<double>();
    std::mt19937 rng(99);
    std::normal_distribution<double> normal;
    const int samples = 200000;
    for (int i = 0; i < n; ++i) {
      int in = 0;
      for (int t = 0; t < samples; ++t) {
        const double hi = clean[i] + normal(rng) * sigma[i];
        int greater = 0;
        for (int j = 0; j < n; ++j) greater += j != i && noisy[j] > hi;
        in += greater < k;
      }
      CHECK(p[i] == Approx(double(in) / samples).margin(0.006));
    }
  }
}

TEST_CASE("moe: hierarchical MoE equals its two-level definition", "[layers][moe][hierarchical]") {
  const int64_t N = 7, d = 5, h = 3;
  const int a = 3, b = 4, kp = 2, ks = 2;
  MoeOptions opt = small_options(a * b, kp, d, h);
  opt.groups = a, opt.k_secondary = ks;
  const Tensor x = test::random_tensor(Shape{N, d}, 31), wp = test::random_tensor(Shape{d, a}, 32, -2, 2);
  const Tensor ws = test::random_tensor(Shape{a, d, b}, 33, -2, 2), w1 = test::random_tensor(Shape{a * b, d, h}, 34);
  const Tensor w2 = test::random_tensor(Shape{a * b, h, d}, 35);
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  MoeWeights w{g.input(wp), {}, g.input(ws), {}, {}, {{g.input(w1), g.input(w2)}, {}}};
  const Vec y = moe_forward(g.input(x), w, opt, {}, {}, false).y.val().to_vector<double>();

  const Vec X = x.to_vector<double>(), WP = wp.to_vector<double>(), WS = ws.to_vector<double>();
  const Vec W1 = w1.to_vector<double>(), W2 = w2.to_vector<double>();
  for (int64_t t = 0; t < N; ++t) {
    const Vec xt(X.begin() + t * d, X.begin() + (t + 1) * d);
    Vec lp(a, 0.0), ref(d, 0.0);
    for (int i = 0; i < a; ++i)
      for (int64_t c = 0; c < d; ++c) lp[i] += xt[c] * WP[c * a + i];
    for (auto [grp, gp] : host_top_k(lp, kp)) {
      Vec ls(b, 0.0);
      for (int j = 0; j < b; ++j)
        for (int64_t c = 0; c < d; ++c) ls[j] += xt[c] * WS[(grp * d + c) * b + j];
      for (auto [j, gs] : host_top_k(ls, ks)) {
        const Vec e = host_expert(xt, W1, W2, grp * b + j, d, h);
        for (int64_t c = 0; c < d; ++c) ref[c] += gp * gs * e[c];
      }
    }
    for (int64_t c = 0; c < d; ++c) CHECK(y[t * d + c] == Approx(ref[c]).margin(1e-12));
  }
}

TEST_CASE("moe: hierarchical losses and gradients with the noise fixed", "[layers][moe][hierarchical][grad]") {
  const int64_t N = 6, d = 4, h = 3;
  const int a = 2, b = 3;
  MoeOptions opt = small_options(a * b, 1, d, h);
  opt.groups = a, opt.k_secondary = 2;
  const std::vector<Tensor> inputs = {
      test::random_tensor(Shape{N, d}, 41),       test::random_tensor(Shape{d, a}, 42, -2, 2),
      test::random_tensor(Shape{d, a}, 43),       test::random_tensor(Shape{a, d, b}, 44, -2, 2),
      test::random_tensor(Shape{a, d, b}, 45),    test::random_tensor(Shape{a * b, d, h}, 46),
      test::random_tensor(Shape{a * b, h, d}, 47)};
  auto build = [&](Graph&, const std::vector<Expr>& in) {
    MoeWeights w{in[1], in[2], in[3], in[4], {}, {{in[5], in[6]}, {}}};
    MoeOutput o = moe_forward(in[0], w, opt, GateNoise{true, 8, 1}, GateNoise{true, 8, 2}, true);
    return concat({flat(o.y), reshape(o.importance_loss, {1}), reshape(o.load_loss, {1})}, 0);
  };
  CHECK(test::gradcheck(inputs, build) < 1e-6);

  // Without noise the hierarchical load is the true count of each (group, expert) and the
  // importance the sum of the combined gates G_p * G_i.
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  std::vector<Expr> in;
  for (const Tensor& t : inputs) in.push_back(g.input(t));
  opt.k = 2;
  MoeWeights w{in[1], {}, in[3], {}, {}, {{in[5], in[6]}, {}}};
  MoeOutput o = moe_forward(in[0], w, opt, {}, {}, true);
  const Vec imp = o.importance.val().to_vector<double>(), load = o.load.val().to_vector<double>();
  double total_imp = 0, total_load = 0;
  for (double v : imp) total_imp += v;
  for (double v : load) total_load += v;
  CHECK(total_imp == Approx(double(N)));                         // every token's combined gates sum to 1
  CHECK(total_load == Approx(double(N * 2 * 2)).epsilon(1e-9));  // kp * ks assignments per token
}

TEST_CASE("moe: zero-initialised gates route uniformly (noise only)", "[layers][moe]") {
  const int64_t N = 4000, d = 8;
  for (int k : {1, 2}) {
    INFO("k " << k);
    const int n = 4;
    const MoeOptions opt = small_options(n, k, d, 4);
    Graph g(Device::cpu());
    Expr x = g.input(test::random_tensor(Shape{N, d}, 51));
    Expr zero = g.input(Tensor::zeros(Shape{d, n}, DType::f64, Device::cpu()));
    MoeWeights w{
        zero,
        zero,
        {},
        {},
        {},
        {{g.input(test::random_tensor(Shape{n, d, 4}, 52)), g.input(test::random_tensor(Shape{n, 4, d}, 53))}, {}}};
    MoeOutput o = moe_forward(x, w, opt, GateNoise{true, 3, 1}, {}, true);
    g.forward();
    for (double v : o.importance.val().to_vector<double>()) CHECK(std::abs(v / N - 1.0 / n) < 0.03);
    const Vec load = o.load.val().to_vector<double>();
    double mean_load = 0;
    for (double v : load) mean_load += v / n;
    for (double v : load) CHECK(std::abs(v / mean_load - 1) < 0.03);
    CHECK(o.importance_loss.val().item() < 0.01);
  }
  // Through the builder: parameters start at zero and both losses are registered.
  ParameterStore store(Device::cpu());
  Graph g(Device::cpu(), &store, GraphOptions{.training = true, .seed = 4});
  Builder b(g, "enc.l0.ffn");
  Expr y = moe_layer(b, g.input(test::random_tensor(Shape{64, d}, 54, -1, 1, DType::f32)), small_options(4, 2, d, 4));
  g.forward();
  CHECK(y.shape() == Shape{64, d});
  REQUIRE(b.aux_losses().size() == 2);
  CHECK(b.aux_losses()[0].name == "enc.l0.ffn.importance");
  CHECK(b.aux_losses()[1].name == "enc.l0.ffn.load");
  for (double v : store.value("enc.l0.ffn.gate.w").to_vector<double>()) CHECK(v == 0);
  g.backward(b.aux_losses()[0].value + b.aux_losses()[1].value + sum_all(y));
  CHECK(store.grad("enc.l0.ffn.expert.w0").to_vector<double>() != std::vector<double>(4 * d * 4, 0.0));
}

TEST_CASE("moe: batchwise gate is strictly balanced; thresholds learn from the batch mask",
          "[layers][moe][batchwise]") {
  const int64_t R = 10;
  const int n = 4, k = 2;  // m = k R / n = 5 rows per expert
  const Tensor logits = test::random_tensor(Shape{R, n}, 61, -2, 2), th = test::random_tensor(Shape{n}, 62, 0.1, 0.4);
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  BatchwiseGate gate = batchwise_gate(g.input(logits), g.input(th), k, true, 0);
  const std::vector<int32_t> expert = gate.routing.expert.val().to_vector<int32_t>();
  const std::vector<int32_t> token = gate.routing.token.val().to_vector<int32_t>();
  const Vec weight = gate.routing.weight.val().to_vector<double>();
  REQUIRE(expert.size() == size_t(n * 5));
  // Host softmax, per-expert top-5 rows, renormalised per row.
  const Vec L = logits.to_vector<double>();
  Vec P(R * n), kept_sum(R, 0.0);
  for (int64_t r = 0; r < R; ++r) {
    double z = 0;
    for (int i = 0; i < n; ++i) z += std::exp(L[r * n + i]);
    for (int i = 0; i < n; ++i) P[r * n + i] = std::exp(L[r * n + i]) / z;
  }
  std::vector<std::vector<int>> chosen(n);
  for (int i = 0; i < n; ++i) {
    std::vector<int> rows(R);
    for (int r = 0; r < R; ++r) rows[r] = r;
    std::stable_sort(rows.begin(), rows.end(), [&](int x, int y) { return P[x * n + i] > P[y * n + i]; });
    chosen[i].assign(rows.begin(), rows.begin() + 5);
    for (int r : chosen[i]) kept_sum[r] += P[r * n + i];
  }
  for (size_t a = 0; a < expert.size(); ++a) {
    CHECK(expert[a] == int(a / 5));
    CHECK(token[a] == chosen[a / 5][a % 5]);
    CHECK(weight[a] == Approx(P[token[a] * n + expert[a]] / kept_sum[token[a]]));
  }
  // dL/dT_i = -(1/R) sum_j (M_thr - M_batch)_{j,i}: finite differences on the thresholds.
  auto loss = [&](Graph&, const std::vector<Expr>& in) {
    return reshape(batchwise_gate(in[0], in[1], k, true, 0).threshold_loss, {1});
  };
  CHECK(test::gradcheck({logits, th}, loss, 1e-6, {1}) < 1e-9);
  // Gate weights: finite differences on the logits.
  auto weights = [&](Graph&, const std::vector<Expr>& in) {
    return batchwise_gate(in[0], in[1], k, true, 0).routing.weight;
  };
  CHECK(test::gradcheck({logits, th}, weights, 1e-6, {0}) < 1e-6);

  // Inference: the top 2k gates of a row kept where above the thresholds, renormalised.
  BatchwiseGate inf = batchwise_gate(g.input(logits), g.input(th), k, false, 0);
  const Vec wi = inf.routing.weight.val().to_vector<double>();
  const std::vector<int32_t> ei = inf.routing.expert.val().to_vector<int32_t>();
  const Vec T = th.to_vector<double>();
  for (int64_t r = 0; r < R; ++r) {
    double z = 0;
    for (int j = 0; j < 4; ++j) z += P[r * n + ei[r * 4 + j]] > T[ei[r * 4 + j]] ? P[r * n + ei[r * 4 + j]] : 0;
    for (int j = 0; j < 4; ++j) {
      const int e = ei[r * 4 + j];
      CHECK(wi[r * 4 + j] == Approx(P[r * n + e] > T[e] ? P[r * n + e] / z : 0.0));
    }
  }
}

TEST_CASE("moe: a single expert, a single token and widths off multiples of 32", "[layers][moe][edge]") {
  const int64_t d = 3, h = 33;
  const MoeOptions opt = small_options(1, 1, d, h);
  const Tensor x = test::random_tensor(Shape{1, d}, 71), w1 = test::random_tensor(Shape{1, d, h}, 72);
  const Tensor w2 = test::random_tensor(Shape{1, h, d}, 73);
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr wg = g.input(test::random_tensor(Shape{d, 1}, 74));
  const Vec y =
      moe_forward(g.input(x), MoeWeights{wg, {}, {}, {}, {}, {{g.input(w1), g.input(w2)}, {}}}, opt, {}, {}, false)
          .y.val()
          .to_vector<double>();
  const Vec ref = host_expert(x.to_vector<double>(), w1.to_vector<double>(), w2.to_vector<double>(), 0, d, h);
  for (int64_t c = 0; c < d; ++c) CHECK(y[c] == Approx(ref[c]).margin(1e-12));
  // Zero tokens: an empty output.
  Expr none = g.input(Tensor::zeros(Shape{0, d}, DType::f64, Device::cpu()));
  CHECK(moe_forward(none, MoeWeights{wg, {}, {}, {}, {}, {{g.input(w1), g.input(w2)}, {}}}, opt, {}, {}, false)
            .y.shape() == Shape{0, d});
}

TEST_CASE("moe: recipe options and the Transformer FFN site", "[layers][moe][config]") {
  YAML::Node node = YAML::Load("{type: moe, experts: 8, k: 2, hidden: 16, groups: 2, k_secondary: 1, w_load: 0.2}");
  const MoeOptions o = moe_options_from_yaml(node, 12, 64);
  CHECK(o.experts == 8);
  CHECK(o.groups == 2);
  CHECK(o.k_secondary == 1);
  CHECK(o.hidden == 16);
  CHECK(o.w_load == Approx(0.2));
  CHECK(o.w_importance == Approx(0.1));
  CHECK(moe_options_from_yaml(YAML::Load("{type: moe}"), 12, 64).hidden == 64);
  CHECK_THROWS_WITH(
      moe_options_from_yaml(YAML::Load("{type: moe, expert: 8}"), 12, 64),
      Catch::Contains("unknown option 'model.ffn.expert'") && Catch::Contains("did you mean 'model.ffn.experts'"));
  CHECK_THROWS_WITH(moe_options_from_yaml(YAML::Load("{type: moe, experts: 6, groups: 4}"), 12, 64),
                    Catch::Contains("experts = 6") && Catch::Contains("groups = 4"));
  CHECK_THROWS_WITH(moe_options_from_yaml(YAML::Load("{type: moe, experts: 4, k: 5}"), 12, 64),
                    Catch::Contains("k = 5"));

  for (const char* yaml : {"{type: moe, experts: 4, k: 2, hidden: 8}",
                           "{type: moe, experts: 8, k: 2, hidden: 8, groups: 2, k_secondary: 2}",
                           "{type: moe, experts: 4, k: 1, hidden: 8, gating: batchwise}"}) {
    INFO(yaml);
    for (bool training : {true, false}) {
      ParameterStore store(Device::cpu());
      Graph g(Device::cpu(), &store, GraphOptions{.training = training});
      Builder b(g, "dec.l1.ffn");
      const auto site = SiteRegistry::instance().ffn(YAML::Load(yaml), FfnShape{12, 48});
      Expr y = site->build(b, g.input(test::random_tensor(Shape{2, 5, 12}, 81, -1, 1, DType::f32)));
      g.forward();
      CHECK(y.shape() == Shape{2, 5, 12});
      for (double v : y.val().to_vector<double>()) CHECK(std::isfinite(v));
      CHECK(b.aux_losses().empty() == !training);
    }
  }
}

TEST_CASE("moe: every MoE recipe's options parse and validate", "[layers][moe][config]") {
  int checked = 0;
  for (const char* name : {"1b-word-moe-4", "1b-word-moe-32", "1b-word-moe-256", "1b-word-moe-256-h",
                           "1b-word-moe-1024-h", "1b-word-moe-4096-h", "1b-word-moe-1-wide", "1b-word-moe-1-deep",
                           "1b-word-moe-34m", "1b-word-moe-143m", "multi30k-en-de-moe"}) {
    INFO(name);
    const YAML::Node model = YAML::LoadFile(std::string(MOE_SOURCE_DIR) + "/recipes/" + name + ".yml")["model"];
    REQUIRE(model);
    const YAML::Node moe = model["ffn"] ? model["ffn"] : model["moe"];
    REQUIRE(moe);
    const MoeOptions o = moe_options_from_yaml(moe, 512, 2048);
    CHECK(o.dim == 512);
    ++checked;
  }
  CHECK(checked == 11);
}

TEST_CASE("moe: the 1B-word LM block is x + dropout(sigmoid(moe(x)))", "[layers][moe]") {
  ParameterStore store(Device::cpu());
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  const MoeOptions opt = small_options(4, 2, 6, 8);
  Expr x = g.input(test::random_tensor(Shape{5, 6}, 91, -1, 1, DType::f32));
  Builder b(g, "moe0");
  const std::vector<float> block = moe_lm_block(b, x, opt, 0.1f).val().to_vector<float>();
  const std::vector<float> raw = moe_layer(b, x, opt).val().to_vector<float>();  // same parameters, no noise
  const std::vector<float> xv = x.val().to_vector<float>();
  for (size_t i = 0; i < block.size(); ++i) CHECK(block[i] == Approx(xv[i] + 1 / (1 + std::exp(-raw[i]))).margin(1e-6));
  CHECK(b.aux_losses().empty());
}

TEST_CASE("moe: batchwise rows that no expert takes get a zero output", "[layers][moe][batchwise][edge]") {
  const int64_t R = 12, d = 3, h = 5;
  MoeOptions opt = small_options(4, 1, d, h);  // m = k R / n = 3 rows per expert
  opt.router = moe_router("batchwise");
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr x = g.input(test::random_tensor(Shape{R, d}, 95));
  Expr wg = g.input(Tensor::zeros(Shape{d, 4}, DType::f64, Device::cpu()));  // ties: all experts take rows 0-2
  MoeWeights w{
      wg,
      {},
      {},
      {},
      g.input(Tensor::zeros(Shape{4}, DType::f64, Device::cpu())),
      {{g.input(test::random_tensor(Shape{4, d, h}, 97)), g.input(test::random_tensor(Shape{4, h, d}, 98))}, {}}};
  BatchwiseGate gate = batchwise_gate(matmul(x, wg), w.thresholds, 1, true, 0);
  const std::vector<int32_t> token = gate.routing.token.val().to_vector<int32_t>();
  const Vec y = moe_forward(x, w, opt, {}, {}, true).y.val().to_vector<double>();
  int empty_rows = 0;
  for (int64_t r = 0; r < R; ++r) {
    if (std::find(token.begin(), token.end(), int32_t(r)) != token.end()) continue;
    ++empty_rows;
    for (int64_t c = 0; c < d; ++c) CHECK(y[r * d + c] == 0.0);
  }
  CHECK(empty_rows == R - 3);
  // Rows 0-2 are taken by all 4 experts with weight 1/4 each: the mean of the experts' outputs.
  const Vec ref = moe_forward(x, MoeWeights{wg, {}, {}, {}, {}, w.experts}, small_options(4, 4, d, h), {}, {}, false)
                      .y.val()
                      .to_vector<double>();
  for (int64_t i = 0; i < 3 * d; ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-12));
}
