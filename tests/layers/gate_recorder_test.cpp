// GateRecorder for the routed families (lib/layers/gate_recorder.h): routed_gate_record on hand-made
// assignments; the MoE FFN site (flat noisy top-k against a host top-k of x W_g, hierarchical and
// batchwise gates) and the MoA sublayer (router softmax, top-k, padding) report in inference graphs
// only. The MAE records are covered by mae_test.cpp / mae_model_test.cpp.
#include "layers/gate_recorder.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "layers/moa.h"
#include "layers/moe_ffn.h"
#include "layers/sites.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
/// Every token's record is consistent: probs = the routed gates scattered to their experts, gates
/// descending, empty slots at the end; returns the per-token sums of probs.
std::vector<double> check_consistent(const GateRecord& r) {
  const int64_t e = r.probs.shape().last(), k = r.experts.shape().last(), n = r.probs.shape().rows();
  const auto p = r.probs.to_vector<double>(), g = r.gates.to_vector<double>();
  const auto x = r.experts.to_vector<int32_t>();
  std::vector<double> sums;
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> dense(static_cast<size_t>(e), 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const size_t i = static_cast<size_t>(t * k + j);
      if (j > 0) CHECK(g[i] <= g[i - 1]);
      if (x[i] < 0) {
        CHECK(g[i] == 0.0);
        continue;
      }
      dense[static_cast<size_t>(x[i])] += g[i];
    }
    for (int64_t c = 0; c < e; ++c) CHECK(p[static_cast<size_t>(t * e + c)] == Approx(dense[static_cast<size_t>(c)]));
    sums.push_back(std::accumulate(dense.begin(), dense.end(), 0.0));
  }
  return sums;
}
}  // namespace

TEST_CASE("gate recorder: routed_gate_record on hand-made assignments", "[layers][recorder]") {
  // Token 0: experts 2 (0.7) and 0 (0.3); token 1: expert 1 (0.5) and 3 (0.5, tie: lower expert first);
  // token 2: one assignment only.
  const GateRecord r = routed_gate_record({0, 2, 3, 1, 2}, {0.3, 0.7, 0.5, 0.5, 1.0}, {0, 0, 1, 1, 2}, 4, Shape{3});
  CHECK(r.probs.shape() == Shape({3, 4}));
  CHECK(r.experts.shape() == Shape({3, 2}));
  CHECK(r.experts.to_vector<int32_t>() == std::vector<int32_t>{2, 0, 1, 3, 2, -1});
  const auto g = r.gates.to_vector<float>();
  CHECK(g == std::vector<float>{0.7f, 0.3f, 0.5f, 0.5f, 1.0f, 0.f});
  CHECK(r.probs.to_vector<float>() == std::vector<float>{0.3f, 0, 0.7f, 0, 0, 0.5f, 0, 0.5f, 0, 0, 1.f, 0});
  const GateRecord shaped = routed_gate_record({1, 0}, {1.0, 1.0}, {0, 1}, 2, Shape{1, 2});
  CHECK(shaped.probs.shape() == Shape({1, 2, 2}));
  CHECK(shaped.experts.shape() == Shape({1, 2, 1}));
  CHECK_THROWS_WITH(routed_gate_record({4}, {1.0}, {0}, 4, Shape{1}), Catch::Contains("expert 4 out of range"));
}

TEST_CASE("gate recorder: the MoE FFN site reports its routing", "[layers][recorder][moe]") {
  const int64_t d = 6;
  for (const char* yaml : {"{type: moe, experts: 4, k: 2, hidden: 8}",
                           "{type: moe, experts: 8, k: 2, hidden: 8, groups: 2, k_secondary: 2}",
                           "{type: moe, experts: 4, k: 1, hidden: 8, gating: batchwise}"}) {
    INFO(yaml);
    const MoeOptions o = moe_options_from_yaml(YAML::Load(yaml), d, 8);
    ParameterStore store(Device::cpu(), 3);
    const Tensor x = test::random_tensor(Shape{2, 3, d}, 17, -1, 1, DType::f32);
    const auto site = SiteRegistry::instance().ffn(YAML::Load(yaml), FfnShape{d, 8});
    for (bool training : {true, false}) {
      Graph g(Device::cpu(), &store, GraphOptions{.training = training});
      Builder b(g, "decoder.l1.ffn");
      GateRecorder rec;
      b.context().recorder = &rec;
      if (!training)  // random gate weights (they start at zero), set once the site has declared them
        for (const char* w : {"decoder.l1.ffn.gate.w", "decoder.l1.ffn.gate2.w"})
          if (store.find(w) >= 0)
            store.value(w).copy_from(test::random_tensor(store.value(w).shape(), 5, -2, 2, DType::f32));
      site->build(b, g.input(x));
      g.forward();
      if (training) {
        CHECK(rec.records().empty());
        continue;
      }
      REQUIRE(rec.records().count("decoder.l1.ffn"));
      const GateRecord& r = rec.records().at("decoder.l1.ffn").at(0);
      CHECK(r.family == "moe");
      CHECK(r.probs.shape() == Shape({2, 3, int64_t{o.experts}}));
      const bool batchwise = o.router->name() == "batchwise";
      const int64_t k = batchwise ? 2 : o.groups > 1 ? o.k * o.k_secondary : o.k;
      CHECK(r.policy == (batchwise ? "batchwise" : o.groups > 1 ? "hierarchical_topk" : "noisy_topk"));
      CHECK(r.max_per_token == k);
      CHECK(r.experts.shape() == Shape({2, 3, k}));
      for (double s : check_consistent(r)) CHECK(s == Approx(1.0).epsilon(1e-5));
      if (o.groups > 1 || batchwise) continue;
      // Flat top-k without noise at inference: the two largest logits of x W_g, softmax over them.
      const auto xv = x.to_vector<double>(), w = store.value("decoder.l1.ffn.gate.w").to_vector<double>();
      const auto ex = r.experts.to_vector<int32_t>();
      const auto gv = r.gates.to_vector<double>();
      for (int64_t t = 0; t < 6; ++t) {
        std::vector<double> logit(4, 0.0);
        for (int c = 0; c < 4; ++c)
          for (int64_t i = 0; i < d; ++i) logit[static_cast<size_t>(c)] += xv[t * d + i] * w[i * 4 + c];
        std::vector<int> order = {0, 1, 2, 3};
        std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return logit[a] > logit[c]; });
        CHECK(ex[t * 2] == order[0]);
        CHECK(ex[t * 2 + 1] == order[1]);
        CHECK(gv[t * 2] == Approx(1 / (1 + std::exp(logit[order[1]] - logit[order[0]]))).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("gate recorder: the MoA sublayer reports its router and top-k", "[layers][recorder][moa]") {
  MoaOptions o;
  o.k = 2;
  o.experts = 3;
  o.head_dim = 4;
  ParameterStore store(Device::cpu(), 3);
  const Tensor x = test::random_tensor(Shape{2, 3, 6}, 19, -1, 1, DType::f32);
  const Tensor pad = Tensor::from_vector(std::vector<uint8_t>{1, 1, 1, 1, 1, 0}, Shape{2, 3});
  for (int pass = 0; pass < 2; ++pass) {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g, "encoder.l0.self_attn");
    GateRecorder rec;
    b.context().recorder = &rec;
    Expr xe = g.input(x);
    moa_attention_layer(b, {xe, xe, pad, false, true, nullptr}, 6, o);
    if (pass == 0) {  // declare, then randomise the (zero-initialised) router
      store.value("encoder.l0.self_attn.router.w").copy_from(test::random_tensor(Shape{6, 3}, 7, -2, 2, DType::f32));
      continue;
    }
    const GateRecord& r = rec.records().at("encoder.l0.self_attn").at(0);
    CHECK(r.family == "moa");
    CHECK(r.policy == "top2");
    CHECK(r.probs.shape() == Shape({2, 3, 3}));
    CHECK(r.experts.shape() == Shape({2, 3, 2}));
    CHECK(r.query_padding.to_vector<uint8_t>() == pad.to_vector<uint8_t>());
    const auto p = r.probs.to_vector<double>(), gv = r.gates.to_vector<double>();
    const auto ex = r.experts.to_vector<int32_t>();
    const auto xv = x.to_vector<double>(), w = store.value("encoder.l0.self_attn.router.w").to_vector<double>();
    for (int64_t t = 0; t < 6; ++t) {
      std::vector<double> z(3, 0.0);
      double sum = 0;
      for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < 6; ++i) z[c] += xv[t * 6 + i] * w[i * 3 + c];
        sum += std::exp(z[c]);
      }
      for (int c = 0; c < 3; ++c) CHECK(p[t * 3 + c] == Approx(t == 5 ? 0.0 : std::exp(z[c]) / sum).margin(1e-6));
      if (t == 5) continue;
      CHECK(gv[t * 2] == Approx(p[t * 3 + ex[t * 2]]));
      CHECK(gv[t * 2 + 1] == Approx(p[t * 3 + ex[t * 2 + 1]]));
      CHECK(gv[t * 2] >= gv[t * 2 + 1]);
    }
  }
}
