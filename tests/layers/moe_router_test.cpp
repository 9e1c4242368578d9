// The MoE routers after 2017 (lib/layers/moe_router*.cpp; loss_free: moe_router_loss_free_test.cpp) and
// what the layer adds around any router (moe_ffn.cpp): each routing against a direct computation on small
// inputs (which tokens go where, the combine weights, the losses), finite-difference gradients (f64), the
// router z-loss, shared experts, moe_every and the sites' descriptions; the registry, its keys and errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "layers/gate_recorder.h"
#include "layers/moe_capacity.h"
#include "layers/moe_ffn.h"
#include "layers/sites.h"
#include "moe_router_reference.h"
#include "support/gradcheck.h"

using namespace moe;
using test::Vec;
using test::options;
using test::host_expert;
using test::host_logits;
using test::softmax_rows;
using test::top_indices;
using test::Layer;
using test::layer;
using test::check_routing;
using test::host_combine;

namespace {
Expr flat(const Expr& x) { return reshape(x, {x.shape().numel()}); }
}  // namespace

TEST_CASE("moe routers: the registry, each router's own keys and their errors", "[layers][moe][router][config]") {
  for (const char* name : {"noisy_topk", "batchwise", "switch", "expert_choice"})
    CHECK_THAT(RouterRegistry::instance().names(), Catch::Contains(name));
  const MoeOptions s = options("{type: moe, gating: switch, k: 1, w_balance: 0.02, normalize: true}", 8, 16);
  CHECK(s.router->name() == "switch");
  CHECK(options("{type: moe}", 8, 16).router->name() == "noisy_topk");
  CHECK_THROWS_WITH(options("{type: moe, gating: noisy_topk, w_balance: 0.1}", 8, 16),
                    Catch::Contains("unknown option 'model.ffn.w_balance'"));
  CHECK_THROWS_WITH(options("{type: moe, gating: swich}", 8, 16), Catch::Contains("model.ffn.gating") &&
                                                                      Catch::Contains("unknown router 'swich'") &&
                                                                      Catch::Contains("switch"));
  CHECK_THROWS_WITH(options("{type: moe, gating: switch, w_balanse: 0.1}", 8, 16),
                    Catch::Contains("did you mean 'model.ffn.w_balance'"));
  CHECK_THROWS_WITH(options("{type: moe, gating: expert_choice, capacity_factor: 1.25}", 8, 16),
                    Catch::Contains("capacity_factor") && Catch::Contains("expert_choice"));
  CHECK_THROWS_WITH(options("{type: moe, experts: 8, groups: 2, capacity_factor: 1}", 8, 16),
                    Catch::Contains("capacity_factor") && Catch::Contains("hierarchical"));
  CHECK_THROWS_WITH(options("{type: moe, gating: switch, groups: 2}", 8, 16), Catch::Contains("groups 2"));
  CHECK_THROWS_WITH(options("{type: moe, moe_every: 0}", 8, 16), Catch::Contains("model.ffn.moe_every"));
  // --help lists the common keys and every router's own.
  const std::string help = SiteRegistry::instance().help_text();
  for (const char* key : {"capacity_factor", "eval_capacity_factor", "z_loss", "shared", "moe_every", "w_balance",
                          "model.ffn.gating: expert_choice"})
    CHECK_THAT(help, Catch::Contains(key));
}

TEST_CASE("moe router switch: the softmax's top k, gates p_i(x), the balancing loss", "[layers][moe][router]") {
  for (const std::string normalize : {"false", "true"})
    for (int k : {1, 2}) {
      INFO("k " << k << ", normalize " << normalize);
      const Layer L = layer(9, 5, 6, 4, 10);
      const MoeOptions o = options("{type: moe, gating: switch, experts: 4, k: " + std::to_string(k) +
                                       ", w_balance: 0.5, normalize: " + normalize + "}",
                                   L.d, L.h);
      Graph g(Device::cpu());
      MoeWeights w;
      w.w_gate = g.input(L.wg);
      w.experts.layers = {g.input(L.w1), g.input(L.w2)};
      const MoeOutput out = moe_forward(g.input(L.x), w, o, {}, {}, true);
      g.forward();
      const Vec P =
          softmax_rows(host_logits(L.x.to_vector<double>(), L.wg.to_vector<double>(), L.rows, L.d, L.n), L.rows, L.n);
      std::vector<std::tuple<int, int, double>> want;
      Vec counts(4, 0.0), mass(4, 0.0);
      for (int64_t t = 0; t < L.rows; ++t) {
        const Vec p(P.begin() + t * 4, P.begin() + (t + 1) * 4);
        double z = 0;
        for (int e : top_indices(p, k)) z += p[e];
        for (int e : top_indices(p, k)) {
          want.emplace_back(e, int(t), normalize == "true" ? p[e] / z : p[e]);
          counts[e] += 1;
        }
        for (int e = 0; e < 4; ++e) mass[e] += p[e];
      }
      check_routing(out, L, want);
      // balance = w n sum_i f_i P_i with f_i = c_i / (k R), P_i = mass_i / R.
      double fp = 0;
      for (int e = 0; e < 4; ++e) fp += counts[e] / (k * L.rows) * mass[e] / L.rows;
      REQUIRE(out.losses.size() == 1);
      CHECK(out.losses[0].leaf == "balance");
      CHECK(out.losses[0].value.val().item() == Approx(0.5 * 4 * fp).epsilon(1e-9));
      CHECK(!out.importance.defined());  // the 2017 losses do not apply
      auto build = [&](Graph&, const std::vector<Expr>& in) {
        MoeWeights v;
        v.w_gate = in[1];
        v.experts.layers = {in[2], in[3]};
        const MoeOutput r = moe_forward(in[0], v, o, {}, {}, true);
        return concat({flat(r.y), reshape(r.router_loss, {1})}, 0);
      };
      CHECK(test::gradcheck({L.x, L.wg, L.w1, L.w2}, build) < 1e-6);
    }
}

TEST_CASE("moe router expert_choice: each expert takes its best ceil(k L / n) tokens of each sentence",
          "[layers][moe][router]") {
  const int64_t B = 3, T = 5;
  const Layer L = layer(B * T, 4, 5, 4, 30);
  const MoeOptions o = options("{type: moe, gating: expert_choice, experts: 4, k: 2}", L.d, L.h);
  const std::vector<int64_t> len = {5, 3, 1};
  std::vector<uint8_t> pad(static_cast<size_t>(B * T), 0);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < len[r]; ++t) pad[r * T + t] = 1;
  RouterContext ctx;
  ctx.lead = Shape{B, T};
  ctx.padding = Tensor::from_vector(pad, Shape{B, T});
  for (bool training : {true, false}) {
    INFO("training " << training);
    ctx.training = training;
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = training});
    MoeWeights w;
    w.w_gate = g.input(L.wg);
    w.experts.layers = {g.input(L.w1), g.input(L.w2)};
    const MoeOutput out = moe_forward(g.input(L.x), w, o, ctx);
    g.forward();
    const Vec P =
        softmax_rows(host_logits(L.x.to_vector<double>(), L.wg.to_vector<double>(), L.rows, L.d, L.n), L.rows, L.n);
    std::vector<std::tuple<int, int, double>> want;
    for (int64_t r = 0; r < B; ++r) {
      const int64_t c = std::min<int64_t>(len[r], (2 * len[r] + 3) / 4);  // ceil(k L / n)
      for (int e = 0; e < 4; ++e) {
        Vec col;
        for (int64_t t = 0; t < len[r]; ++t) col.push_back(P[(r * T + t) * 4 + e]);
        for (int t : top_indices(col, int(c))) want.emplace_back(e, int(r * T + t), P[(r * T + t) * 4 + e]);
      }
    }
    const auto ex = out.routing.expert.val().to_vector<int32_t>();
    const auto tok = out.routing.token.val().to_vector<int32_t>();
    const Vec wt = out.routing.weight.val().to_vector<double>();
    REQUIRE(ex.size() == want.size());  // 4 x (3 + 2 + 1) picks
    CHECK(ex.size() == 24);
    for (size_t a = 0; a < ex.size(); ++a) {
      CHECK(ex[a] == std::get<0>(want[a]));
      CHECK(tok[a] == std::get<1>(want[a]));
      CHECK(wt[a] == Approx(std::get<2>(want[a])).margin(1e-12));
    }
    const Vec y = out.y.val().to_vector<double>(), ref = host_combine(L, want);
    for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-12));
    CHECK(out.losses.empty());
  }
  // A sentence routes the same alone as in a batch (the other rows and their padding move nothing).
  RouterContext alone = ctx;
  alone.lead = Shape{1, 3};
  alone.padding = Tensor::from_vector(std::vector<uint8_t>{1, 1, 1}, Shape{1, 3});
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  MoeWeights w;
  w.w_gate = g.input(L.wg);
  w.experts.layers = {g.input(L.w1), g.input(L.w2)};
  const Vec batch = moe_forward(g.input(L.x), w, o, ctx).y.val().to_vector<double>();
  const Vec one = moe_forward(g.input(L.x.rows(T, 3).clone()), w, o, alone).y.val().to_vector<double>();
  for (int64_t i = 0; i < 3 * L.d; ++i) CHECK(one[i] == Approx(batch[T * L.d + i]).margin(1e-12));
  auto build = [&](Graph&, const std::vector<Expr>& in) {
    MoeWeights v;
    v.w_gate = in[1];
    v.experts.layers = {in[2], in[3]};
    RouterContext c = ctx;
    c.training = true;
    return moe_forward(in[0], v, o, c).y;
  };
  CHECK(test::gradcheck({L.x, L.wg, L.w1, L.w2}, build) < 1e-6);
}

TEST_CASE("moe: the router z-loss mean_x logsumexp(l(x))^2, for any router", "[layers][moe][router]") {
  const Layer L = layer(7, 4, 5, 4, 70);
  for (const std::string router : {"noisy_topk", "switch", "batchwise"}) {
    INFO(router);
    const MoeOptions o =
        options("{type: moe, gating: " + router + ", experts: 4, k: 2, z_loss: 0.01, noisy: false}", L.d, L.h);
    auto build = [&](Graph& g, const std::vector<Expr>& in) {
      MoeWeights v;
      v.w_gate = in[1];
      v.experts.layers = {in[2], in[3]};
      if (router == "batchwise") v.thresholds = g.input(Tensor::zeros(Shape{4}, DType::f64, Device::cpu()));
      return reshape(moe_forward(in[0], v, o, {}, {}, true).z_loss, {1});
    };
    const Vec l = host_logits(L.x.to_vector<double>(), L.wg.to_vector<double>(), L.rows, L.d, L.n);
    double z = 0;
    for (int64_t t = 0; t < L.rows; ++t) {
      double s = 0;
      for (int e = 0; e < 4; ++e) s += std::exp(l[t * 4 + e]);
      z += std::log(s) * std::log(s) / L.rows;
    }
    Graph g(Device::cpu());
    std::vector<Expr> in;
    for (const Tensor& t : {L.x, L.wg, L.w1, L.w2}) in.push_back(g.input(t));
    const Expr value = build(g, in);
    g.forward();
    CHECK(value.val().item() == Approx(z).epsilon(1e-12));
    CHECK(test::gradcheck({L.x, L.wg, L.w1, L.w2}, build, 1e-6, {0, 1}) < 1e-6);
  }
  // Registered by the builder as "<site>.z_loss", weighted.
  ParameterStore store(Device::cpu());
  Graph g(Device::cpu(), &store, GraphOptions{.training = true});
  Builder b(g, "l0.ffn");
  moe_layer(b, g.input(test::random_tensor(Shape{6, 4}, 71, -1, 1, DType::f32)),
            options("{type: moe, gating: switch, experts: 4, k: 1, z_loss: 0.5}", 4, 8));
  std::vector<std::string> names;
  for (const AuxLoss& a : b.aux_losses()) names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"l0.ffn.balance", "l0.ffn.z_loss"});
}

TEST_CASE("moe: shared experts add every token's dense experts to its routed ones", "[layers][moe][router]") {
  const Layer L = layer(6, 4, 5, 4, 80);
  const int64_t hs = 3;
  const Tensor s1 = test::random_tensor(Shape{2, L.d, hs}, 85), s2 = test::random_tensor(Shape{2, hs, L.d}, 86);
  const MoeOptions o = options("{type: moe, experts: 4, k: 1, shared: 2, shared_hidden: 3, noisy: false}", L.d, L.h);
  auto build = [&](Graph&, const std::vector<Expr>& in) {
    MoeWeights v;
    v.w_gate = in[1];
    v.experts.layers = {in[2], in[3]};
    v.shared.layers = {in[4], in[5]};
    return moe_forward(in[0], v, o, {}, {}, false).y;
  };
  const Vec y = test::evaluate({L.x, L.wg, L.w1, L.w2, s1, s2}, build).to_vector<double>();
  const Vec l = host_logits(L.x.to_vector<double>(), L.wg.to_vector<double>(), L.rows, L.d, L.n);
  std::vector<std::tuple<int, int, double>> routed;
  for (int64_t t = 0; t < L.rows; ++t)
    routed.emplace_back(top_indices(Vec(l.begin() + t * 4, l.begin() + t * 4 + 4), 1)[0], int(t), 1.0);
  Vec ref = host_combine(L, routed);
  const Vec X = L.x.to_vector<double>(), S1 = s1.to_vector<double>(), S2 = s2.to_vector<double>();
  for (int64_t t = 0; t < L.rows; ++t)
    for (int e = 0; e < 2; ++e) {
      const Vec o2 = host_expert(Vec(X.begin() + t * L.d, X.begin() + (t + 1) * L.d), S1, S2, e, L.d, hs);
      for (int64_t c = 0; c < L.d; ++c) ref[t * L.d + c] += o2[c];
    }
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-12));
  CHECK(test::gradcheck({L.x, L.wg, L.w1, L.w2, s1, s2}, build, 1e-6, {0, 4, 5}) < 1e-6);
}

TEST_CASE("moe: moe_every places MoE layers between dense ones; the sites describe their routing",
          "[layers][moe][router][sites]") {
  const FfnShape shape{8, 32};
  const auto site = SiteRegistry::instance().ffn(
      YAML::Load("{type: moe, experts: 4, k: 2, hidden: 8, moe_every: 2, expert_bias: true}"), shape);
  CHECK(!site->routed(FfnRole::encoder, 0));
  const std::optional<RoutedSite> s = site->routed(FfnRole::encoder, 1);
  REQUIRE(s);
  CHECK(s->router == "noisy_topk");
  CHECK(s->experts == 4);
  CHECK(s->active == 2);
  CHECK(s->expert_params == std::vector<std::string>{"expert.w0", "expert.b0", "expert.w1", "expert.b1"});
  CHECK(s->training == RoutingScope::token);
  ParameterStore store(Device::cpu());
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  const Builder b(g, "encoder");
  const Expr x = g.input(test::random_tensor(Shape{2, 3, 8}, 90, -1, 1, DType::f32));
  for (int l : {0, 1}) site->build(b.layer(l).sub("ffn"), x, FfnInput{FfnRole::encoder, l, Tensor()});
  std::vector<std::string> names;
  for (const ParamEntry& e : store.entries()) names.push_back(e.name);
  CHECK(std::count_if(names.begin(), names.end(), [](const std::string& n) {
          return n.rfind("encoder.l0.", 0) == 0 && n.find("expert") != std::string::npos;
        }) == 0);
  CHECK(std::find(names.begin(), names.end(), "encoder.l1.ffn.expert.w0") != names.end());
  CHECK_THROWS_WITH(site->routed(FfnRole::lm, -1), Catch::Contains("moe_every"));
  // Each router's scopes, and a token capacity's.
  auto described = [&](const std::string& yaml) {
    return *SiteRegistry::instance().ffn(YAML::Load(yaml), shape)->routed(FfnRole::encoder, 0);
  };
  const RoutedSite bw = described("{type: moe, gating: batchwise}");
  CHECK((bw.training == RoutingScope::batch && bw.inference == RoutingScope::token));
  const RoutedSite ec = described("{type: moe, gating: expert_choice}");
  CHECK((ec.training == RoutingScope::sequence && ec.inference == RoutingScope::sequence));
  const RoutedSite sw = described("{type: moe, gating: switch, k: 1, capacity_factor: 1.25}");
  CHECK((sw.training == RoutingScope::earlier && sw.inference == RoutingScope::token));
  const RoutedSite tk = described("{type: moe, shared: 1, eval_capacity_factor: 2}");
  CHECK((tk.training == RoutingScope::token && tk.inference == RoutingScope::earlier && tk.shared == 1));
  CHECK(described("{type: moe, experts: 8, groups: 2, k: 2, k_secondary: 2}").active == 4);
}

TEST_CASE("moe: the gate recorder reports a token capacity's drops, applied or at training's factor",
          "[layers][moe][router][recorder]") {
  const Tensor x = test::random_tensor(Shape{2, 10, 4}, 95, -1, 1, DType::f32);
  for (const std::string eval : {"0", "1"}) {
    INFO("eval_capacity_factor " << eval);
    ParameterStore store(Device::cpu());
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    GateRecorder rec;
    Builder b(g, "encoder.l0.ffn");
    b.context().recorder = &rec;
    const auto site = SiteRegistry::instance().ffn(
        YAML::Load("{type: moe, gating: switch, experts: 4, k: 1, hidden: 8, capacity_factor: 0.5, "
                   "eval_capacity_factor: " +
                   eval + "}"),
        FfnShape{4, 8});
    site->build(b, g.input(x));
    const GateRecord& r = rec.records().at("encoder.l0.ffn").at(0);
    CHECK(r.max_per_token == 1);
    CHECK(r.capacity.applied == (eval == "1"));
    CHECK(r.capacity.factor == (eval == "1" ? 1.0 : 0.5));
    const int64_t c = token_capacity(r.capacity.factor, 20, 1, 4);
    CHECK(r.capacity.capacity == c);
    const std::vector<int32_t> ex = r.experts.to_vector<int32_t>();
    const CapacityCount n = count_capacity(ex, 4, c);
    CHECK(r.capacity.pairs == 20);
    CHECK(r.capacity.dropped == n.dropped);
    CHECK(r.capacity.kept == 20 - n.dropped);
    CHECK(r.capacity.slots == 4 * c);
  }
}
