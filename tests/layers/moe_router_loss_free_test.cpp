// Router loss_free (lib/layers/moe_router_loss_free.cpp; DeepSeek-V3's balancing without an auxiliary
// loss): the bias chooses the experts and the gates ignore it (against a direct computation with sigmoid
// and softmax scores), the bias steps by bias_rate against the load once a training graph ran (in place,
// a state of the store that checkpoints keep), finite-difference gradients (f64), its keys and the z-loss.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "graph/expr/shape_ops.h"
#include "layers/moe_ffn.h"
#include "layers/sites.h"
#include "moe_router_reference.h"
#include "support/gradcheck.h"

using namespace moe;
using test::Vec;
using test::options;
using test::host_logits;
using test::softmax_rows;
using test::top_indices;
using test::Layer;
using test::layer;
using test::check_routing;

TEST_CASE("moe router loss_free: registered with its keys", "[layers][moe][router]") {
  CHECK_THAT(RouterRegistry::instance().names(), Catch::Contains("loss_free"));
  CHECK(options("{type: moe, gating: loss_free, bias_rate: 0.01, score: softmax}", 8, 16).router->name() ==
        "loss_free");
  CHECK_THROWS_WITH(options("{type: moe, gating: loss_free, score: tanh}", 8, 16),
                    Catch::Contains("model.ffn.score") && Catch::Contains("sigmoid | softmax"));
  CHECK_THAT(SiteRegistry::instance().help_text(),
             Catch::Contains("model.ffn.gating: loss_free") && Catch::Contains("bias_rate"));
  const RoutedSite s = *SiteRegistry::instance()
                            .ffn(YAML::Load("{type: moe, gating: loss_free, capacity_factor: 1}"), FfnShape{8, 16})
                            ->routed(FfnRole::lm, 0);
  CHECK((s.training == RoutingScope::earlier && s.inference == RoutingScope::token));
}

TEST_CASE("moe router loss_free: the bias chooses the experts, the gates ignore it, the bias steps against the load",
          "[layers][moe][router]") {
  const Layer L = layer(10, 4, 5, 4, 50);
  const std::vector<float> b0 = {0.3f, 0.f, 0.f, -0.3f};
  for (const std::string score : {"sigmoid", "softmax"}) {
    INFO(score);
    const MoeOptions o =
        options("{type: moe, gating: loss_free, experts: 4, k: 2, bias_rate: 0.125, score: " + score + "}", L.d, L.h);
    Graph g(Device::cpu());
    MoeWeights w;
    w.w_gate = g.input(L.wg);
    w.experts.layers = {g.input(L.w1), g.input(L.w2)};
    const Tensor bias = Tensor::from_vector(b0, Shape{4});
    w.router["gate.bias"] = g.input(bias);
    const MoeOutput out = moe_forward(g.input(L.x), w, o, {}, {}, true);
    g.forward();
    const Vec l = host_logits(L.x.to_vector<double>(), L.wg.to_vector<double>(), L.rows, L.d, L.n);
    const Vec P = softmax_rows(l, L.rows, L.n);
    std::vector<std::tuple<int, int, double>> want;
    Vec load(4, 0.0);
    for (int64_t t = 0; t < L.rows; ++t) {
      Vec s(4), biased(4);
      for (int e = 0; e < 4; ++e) {
        s[e] = score == "sigmoid" ? 1 / (1 + std::exp(-l[t * 4 + e])) : P[t * 4 + e];
        biased[e] = s[e] + b0[e];
      }
      const std::vector<int> chosen = top_indices(biased, 2);
      const double z = s[chosen[0]] + s[chosen[1]];
      for (int e : chosen) {
        want.emplace_back(e, int(t), score == "sigmoid" ? s[e] / z : s[e]);
        load[e] += 1;
      }
    }
    check_routing(out, L, want);
    CHECK(out.losses.empty());
    // b_i += 0.125 sign(mean load - load_i), in place, once the training graph ran.
    const std::vector<float> after = bias.to_vector<float>();
    for (int e = 0; e < 4; ++e) {
      const double diff = 5.0 - load[e];  // mean load = 10 tokens x 2 / 4 experts
      CHECK(after[e] == Approx(b0[e] + 0.125 * (diff > 0 ? 1 : diff < 0 ? -1 : 0)));
    }
  }
  // Gradients (rate 0: the bias stays; it takes none itself).
  const MoeOptions o = options("{type: moe, gating: loss_free, experts: 4, k: 2, bias_rate: 0}", L.d, L.h);
  auto build = [&](Graph& g, const std::vector<Expr>& in) {
    MoeWeights v;
    v.w_gate = in[1];
    v.experts.layers = {in[2], in[3]};
    v.router["gate.bias"] = g.input(Tensor::from_vector(b0, Shape{4}));
    return moe_forward(in[0], v, o, {}, {}, true).y;
  };
  CHECK(test::gradcheck({L.x, L.wg, L.w1, L.w2}, build) < 1e-6);
  // Through the builder the bias is a state of the store, saved with the checkpoint, stepped by training graphs.
  ParameterStore store(Device::cpu());
  const MoeOptions fast = options("{type: moe, gating: loss_free, experts: 4, k: 1, bias_rate: 0.5}", 4, 8);
  for (bool training : {true, false}) {
    Graph g(Device::cpu(), &store, GraphOptions{.training = training});
    moe_layer(Builder(g, "moe0"), g.input(test::random_tensor(Shape{16, 4}, 61, -1, 1, DType::f32)), fast);
    g.forward();
  }
  const std::vector<float> stepped = store.value("moe0.gate.bias").to_vector<float>();  // one training step
  CHECK(std::count_if(stepped.begin(), stepped.end(), [](float v) { return std::abs(v) == 0.5f; }) >= 2);
  CHECK(store.entry(store.find("moe0.gate.bias")).state);
}
