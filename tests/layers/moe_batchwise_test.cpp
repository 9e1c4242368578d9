// Strictly balanced gating at inference (lib/layers/moe_ffn_gating.cpp; Shazeer et al. 2017, App. F;
// docs/MODELS.md §3.10) against a direct computation of eq. 19 on hand-made gate values and thresholds:
// M_thr(x, T)_i = [G_sigma(x)_i > T_i], G(x)_i = G_sigma(x)_i M_i / sum_j G_sigma(x)_j M_j (eq. 16), with
// moe's cap (batchwise_inference_k, default 2k) keeping the largest gates among the experts that passed.
// Rows: an expert above its threshold outside the top 2k gates (the old rule dropped it), more than 2k
// experts above threshold, none above (a zero output), and a mix; the layer's output equals the dense sum.
// Training: the threshold loss is eq. 20 divided by the batch's rows, and so is its gradient on T.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/matmul.h"
#include "layers/moe_ffn.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
using Vec = std::vector<double>;
constexpr int kN = 8, kK = 2;  // cap 2k = 4
constexpr int64_t kRows = 4;
// Gate values G_sigma (rows sum to 1; the logits are their logs) and thresholds T.
const Vec kGates = {
    0.20, 0.20, 0.20, 0.20, 0.04, 0.04, 0.04, 0.08,  // A: only expert 7 passes, below the top 2k = 4 gates
    0.31, 0.02, 0.02, 0.02, 0.12, 0.14, 0.16, 0.21,  // B: 0, 4, 5, 6, 7 pass: 5 > 2k
    0.25, 0.25, 0.25, 0.20, 0.01, 0.01, 0.02, 0.01,  // C: none passes
    0.35, 0.29, 0.10, 0.10, 0.06, 0.03, 0.04, 0.03,  // D: 0, 4 and 7 pass; 1-3 are top 2k but below
};
const Vec kThresholds = {0.30, 0.30, 0.30, 0.30, 0.05, 0.05, 0.05, 0.02};

/// Eq. 19 and eq. 16 on the host, [rows, n]; with `cap` < n, only the cap largest passing gates are kept.
Vec eq19(int cap) {
  Vec g(kGates.size(), 0.0);
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<int> passed;
    for (int i = 0; i < kN; ++i)
      if (kGates[r * kN + i] > kThresholds[i]) passed.push_back(i);
    std::stable_sort(passed.begin(), passed.end(),
                     [&](int a, int b) { return kGates[r * kN + a] > kGates[r * kN + b]; });
    if (static_cast<int>(passed.size()) > cap) passed.resize(static_cast<size_t>(cap));
    double z = 0;
    for (int i : passed) z += kGates[r * kN + i];
    for (int i : passed) g[r * kN + i] = kGates[r * kN + i] / z;
  }
  return g;
}

/// The routing of batchwise_gate at inference as dense gates [rows, n].
Vec routed(Graph& g, int inference_k) {
  Vec logits(kGates.size());
  std::transform(kGates.begin(), kGates.end(), logits.begin(), [](double p) { return std::log(p); });
  const BatchwiseGate gate =
      batchwise_gate(g.input(Tensor::from_vector(logits, Shape{kRows, kN})),
                     g.input(Tensor::from_vector(kThresholds, Shape{kN})), kK, false, inference_k);
  const std::vector<int32_t> expert = gate.routing.expert.val().to_vector<int32_t>();
  const Vec weight = gate.routing.weight.val().to_vector<double>();
  REQUIRE(!gate.routing.token.defined());
  REQUIRE(expert.size() == static_cast<size_t>(kRows * gate.routing.per_token));
  Vec dense(kGates.size(), 0.0);
  for (size_t a = 0; a < expert.size(); ++a)
    dense[(a / static_cast<size_t>(gate.routing.per_token)) * kN + static_cast<size_t>(expert[a])] += weight[a];
  return dense;
}

void check_dense(const Vec& got, const Vec& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("row " << i / kN << " expert " << i % kN);
    CHECK(got[i] == Approx(want[i]).margin(1e-12));
  }
}
}  // namespace

TEST_CASE("moe batchwise: inference applies the thresholds (eq. 19) before the cap", "[layers][moe][batchwise]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  const Vec capped = routed(g, 0);  // 0: the default cap 2k = 4
  check_dense(capped, eq19(2 * kK));
  // Row A: expert 7 alone (the old top-2k-first rule routed nothing); row C: nothing.
  CHECK(capped[0 * kN + 7] == Approx(1.0));
  for (int i = 0; i < kN; ++i) CHECK(capped[2 * kN + i] == 0.0);
  // Row B: five experts pass; the cap drops the smallest of them (expert 4, 0.12), not a larger one.
  CHECK(capped[1 * kN + 4] == 0.0);
  CHECK(capped[1 * kN + 0] == Approx(0.31 / 0.82));
  // Row D: experts 0, 4 and 7, though 1-3 have larger gates.
  CHECK(capped[3 * kN + 4] == Approx(0.06 / 0.44));
  // batchwise_inference_k = n: eq. 19 as written, every passing expert (row B's five).
  const Vec all = routed(g, kN);
  check_dense(all, eq19(kN));
  CHECK(all[1 * kN + 4] == Approx(0.12 / 0.94));
  // A cap of 1: the largest passing gate, weight 1.
  check_dense(routed(g, 1), eq19(1));
}

TEST_CASE("moe batchwise: the layer's inference output is the dense sum of eq. 19's gates",
          "[layers][moe][batchwise]") {
  const int64_t d = kN, h = 5;
  MoeOptions opt;
  opt.dim = d, opt.experts = kN, opt.k = kK, opt.hidden = h, opt.router = moe_router("batchwise");
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  // x = log G_sigma and W_g = I: the logits are the hand-made ones.
  Vec xv(kGates.size()), eye(static_cast<size_t>(d * kN), 0.0);
  std::transform(kGates.begin(), kGates.end(), xv.begin(), [](double p) { return std::log(p); });
  for (int i = 0; i < kN; ++i) eye[static_cast<size_t>(i * kN + i)] = 1;
  const Tensor w1 = test::random_tensor(Shape{kN, d, h}, 31), w2 = test::random_tensor(Shape{kN, h, d}, 32);
  MoeWeights w{g.input(Tensor::from_vector(eye, Shape{d, kN})),
               {},
               {},
               {},
               g.input(Tensor::from_vector(kThresholds, Shape{kN})),
               {{g.input(w1), g.input(w2)}, {}}};
  const Vec y =
      moe_forward(g.input(Tensor::from_vector(xv, Shape{kRows, d})), w, opt, {}, {}, false).y.val().to_vector<double>();
  const Vec gate = eq19(2 * kK), W1 = w1.to_vector<double>(), W2 = w2.to_vector<double>();
  for (int64_t r = 0; r < kRows; ++r) {
    Vec want(static_cast<size_t>(d), 0.0);
    for (int e = 0; e < kN; ++e) {
      if (gate[r * kN + e] == 0) continue;
      Vec hid(static_cast<size_t>(h), 0.0);
      for (int64_t j = 0; j < h; ++j) {
        for (int64_t i = 0; i < d; ++i) hid[j] += xv[r * d + i] * W1[(e * d + i) * h + j];
        hid[j] = std::max(hid[j], 0.0) / std::sqrt(double(h) / double(d));  // autoscale of the second layer
      }
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < h; ++j) want[i] += gate[r * kN + e] * hid[j] * W2[(e * h + j) * d + i];
    }
    for (int64_t i = 0; i < d; ++i) {
      INFO("row " << r << " feature " << i);
      CHECK(y[r * d + i] == Approx(want[i]).margin(1e-12));
      if (r == 2) CHECK(y[r * d + i] == 0.0);  // row C: no expert above its threshold, output 0
    }
  }
}

TEST_CASE("moe batchwise: the threshold loss is eq. 20 per token; its gradient is a share of the batch",
          "[layers][moe][batchwise]") {
  const int64_t R = 10;
  const int n = 4, k = 2;  // m = k R / n = 5 rows per expert
  const Tensor logits = test::random_tensor(Shape{R, n}, 41, -2, 2, DType::f32);
  const Vec T = {0.1, 0.35, 0.2, 0.3};
  // L and dL/dT from a graph whose thresholds are a parameter.
  auto run = [&](const Tensor& x) {
    ParameterStore store(Device::cpu());
    Graph g(Device::cpu(), &store, GraphOptions{.training = true});
    Expr th = g.param("t", Shape{n}, Init::from_values(std::vector<float>(T.begin(), T.end())));
    const Expr loss = batchwise_gate(g.input(x), th, k, true, 0).threshold_loss;
    g.forward();
    g.backward(loss);
    return std::make_pair(loss.val().item(), store.grad("t").to_vector<double>());
  };
  const auto [loss, grad] = run(logits);
  // Host: softmax X, batch mask (each expert's 5 largest rows), threshold mask, eq. 20 over R.
  const Vec L = logits.to_vector<double>();
  Vec X(static_cast<size_t>(R * n));
  for (int64_t r = 0; r < R; ++r) {
    double z = 0;
    for (int i = 0; i < n; ++i) z += std::exp(L[r * n + i]);
    for (int i = 0; i < n; ++i) X[r * n + i] = std::exp(L[r * n + i]) / z;
  }
  double want = 0;
  Vec want_grad(n, 0.0);
  for (int i = 0; i < n; ++i) {
    std::vector<int> rows(R);
    for (int r = 0; r < R; ++r) rows[r] = r;
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) { return X[a * n + i] > X[b * n + i]; });
    for (int j = 0; j < R; ++j) {
      const double batch = std::find(rows.begin(), rows.begin() + 5, j) != rows.begin() + 5 ? 1 : 0;
      const double thr = X[j * n + i] > T[i] ? 1 : 0;
      want += (thr - batch) * (X[j * n + i] - T[i]) / R;
      want_grad[i] -= (thr - batch) / R;
    }
  }
  CHECK(loss == Approx(want).epsilon(1e-5));
  for (int i = 0; i < n; ++i) {
    INFO("expert " << i);
    CHECK(grad[i] == Approx(want_grad[i]).margin(1e-6));
    CHECK(std::abs(grad[i]) <= 1.0);
  }
  CHECK(std::any_of(grad.begin(), grad.end(), [](double v) { return v != 0; }));
  // The same rows twice: each expert takes both copies of its rows, and the loss and its gradient stay
  // (a sum over the batch, eq. 20 as printed, would double).
  std::vector<float> twice = logits.to_vector<float>();
  twice.insert(twice.end(), twice.begin(), twice.end());
  const auto [loss2, grad2] = run(Tensor::from_vector(twice, Shape{2 * R, n}));
  CHECK(loss2 == Approx(loss).epsilon(1e-5));
  for (int i = 0; i < n; ++i) CHECK(grad2[i] == Approx(grad[i]).margin(1e-6));
}

TEST_CASE("moe batchwise: batchwise_inference_k must be in [0, experts]", "[layers][moe][batchwise][config]") {
  CHECK(moe_options_from_yaml(YAML::Load("{type: moe, experts: 8, k: 2, gating: batchwise, batchwise_inference_k: 8}"),
                              4, 8)
            .batchwise_inference_k == 8);
  for (const char* bad : {"-1", "9"}) {
    INFO(bad);
    CHECK_THROWS_WITH(moe_options_from_yaml(YAML::Load(std::string("{type: moe, experts: 8, k: 2, gating: batchwise, "
                                                                   "batchwise_inference_k: ") +
                                                       bad + "}"),
                                            4, 8),
                      Catch::Contains("batchwise_inference_k = " + std::string(bad)) && Catch::Contains("experts = 8"));
  }
}
