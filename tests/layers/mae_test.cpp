// MAE layer (lib/layers/mae.h): options and names; the expert-to-head algebra; a uniform gate equal to
// MHA (learned gate with a zero output layer, MAE-7 and MAE-6, and UNI-MAE without gate parameters);
// F steps equal MHA with the drawn head(s) dropped, exact zero gradients for them and h/(h-1)-scaled
// ones for the others, draws following the gate; G-step gradients of the gate by finite differences;
// argmax inference; batch-norm running statistics updated in training and used in eval; flag errors.
#include "layers/mae.h"

#include <catch2/catch.hpp>
#include <set>

#include "layers/gate_recorder.h"
#include "mae_test_util.h"

using namespace moe;
using test::mae_opts;

namespace {
constexpr int64_t D = 8;  // model width; 4 heads of 2

/// Declares the site's parameters (an inference graph allocates them at once).
void declare(ParameterStore& store, const MaeOptions& o, SiteRole role = SiteRole::encoder_self) {
  Graph g(Device::cpu(), &store, test::f64_graph(false));
  Expr x = g.input(test::random_tensor(Shape{2, 3, D}, 1));
  mae_attention_layer(Builder(g, "site"), test::self_input(x, role != SiteRole::encoder_self), D, o, role);
}

/// The site's output for x in a graph with `opt` and the expert choice `experts`.
std::vector<double> site(ParameterStore& store, const MaeOptions& o, const Tensor& x, GraphOptions opt,
                         ExpertChoice experts = ExpertChoice::mixture, bool causal = false,
                         SiteRole role = SiteRole::encoder_self) {
  Graph g(Device::cpu(), &store, opt);
  Builder b(g, "site");
  b.context().experts = experts;
  Expr out = mae_attention_layer(b, test::self_input(g.input(x), causal), D, o, role);
  g.forward();
  return out.val().to_vector<double>();
}

std::vector<double> reference(ParameterStore& store, const Tensor& x, const Tensor& omega, bool causal = false) {
  Graph g(Device::cpu(), &store, test::f64_graph(false));
  return test::mha_reference(Builder(g, "site"), test::self_input(g.input(x), causal), D, 4, omega)
      .val()
      .to_vector<double>();
}

/// Rows [r * cols, (r + 1) * cols) of v.
std::vector<double> row(const std::vector<double>& v, int64_t r, int64_t cols) {
  return {v.begin() + r * cols, v.begin() + (r + 1) * cols};
}
}  // namespace

TEST_CASE("mae: options, names and errors", "[layers][mae]") {
  const MaeOptions d = mae_opts("{type: mae}", 8);
  CHECK(d.name() == "MAE-7");
  CHECK(d.experts() == 8);
  CHECK(d.gate == MaeGate::learned);
  CHECK(d.training == MaeTraining::bcd);
  CHECK(d.gate_hidden == 256);
  CHECK(d.gate_dropout == Approx(0.1));
  CHECK(d.gate_window == 100);
  // The default gate inputs are leak_free (issue 16; the paper preset was the default before).
  CHECK(d.policy(SiteRole::encoder_self) == GateInput::full_mean);
  CHECK(d.policy(SiteRole::decoder_self) == GateInput::causal_prefix_mean);
  CHECK(d.policy(SiteRole::decoder_cross) == GateInput::causal_prefix_mean);
  CHECK(d.policy(SiteRole::lm_self) == GateInput::causal_window_mean);
  const MaeOptions paper = mae_opts("{type: mae, gate_input: paper}", 8);
  CHECK(paper.policy(SiteRole::encoder_self) == GateInput::full_mean);
  CHECK(paper.policy(SiteRole::decoder_self) == GateInput::full_mean);
  CHECK(paper.policy(SiteRole::decoder_cross) == GateInput::full_mean);
  CHECK(paper.policy(SiteRole::lm_self) == GateInput::causal_window_mean);
  const MaeOptions six = mae_opts("{type: mae, name: MAE-6}", 8);
  CHECK(six.dropped == 2);
  CHECK(six.experts() == 28);
  CHECK(mae_opts("{type: mae, experts: h-2}", 8).name() == "MAE-6");
  CHECK(mae_opts("{type: mae, name: UNI-MAE-7}", 8).gate == MaeGate::uniform);
  CHECK(mae_opts("{type: mae, name: UNI-MAE-6}", 8).name() == "UNI-MAE-6");
  CHECK(mae_opts("{type: mae, name: NOBCD-7}", 8).training == MaeTraining::joint);
  CHECK(mae_opts("{type: mae, name: MAE-3}", 4).experts() == 4);
  const MaeOptions lf = mae_opts("{type: mae, gate_input: leak_free}", 8);
  CHECK(lf.gate_input == d.gate_input);
  // A map changes the roles it names and keeps the default preset's others.
  const MaeOptions m = mae_opts("{type: mae, gate_input: {decoder_cross: source_mean}, gate_window: 7}", 8);
  CHECK(m.policy(SiteRole::decoder_cross) == GateInput::source_mean);
  CHECK(m.policy(SiteRole::decoder_self) == GateInput::causal_prefix_mean);
  CHECK(m.gate_window == 7);
  CHECK_THROWS_WITH(mae_opts("{type: mae, heads: 3}", 8), Catch::Contains("model.attention.heads"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, name: MAE-5}", 8), Catch::Contains("MAE-5") && Catch::Contains("heads = 8"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, name: MAE7}", 8), Catch::Contains("MAE7"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, name: MAE-7, experts: h-2}", 8), Catch::Contains("disagrees"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, experts: 7}", 8), Catch::Contains("experts"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate: sparse}", 8), Catch::Contains("gate") && Catch::Contains("sparse"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate: uniform, training: joint}", 8), Catch::Contains("uniform"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_dropout: 1}", 8), Catch::Contains("gate_dropout"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_hidden: x}", 8), Catch::Contains("gate_hidden"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_input: {encoder_self: source_mean}}", 8),
                    Catch::Contains("gate_input.encoder_self") && Catch::Contains("decoder sites"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_input: {decoder: full_mean}}", 8), Catch::Contains("'decoder'"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_input: {lm_self: last}}", 8), Catch::Contains("'last'"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, gate_input: future}", 8), Catch::Contains("'future'"));
  CHECK_THROWS_WITH(mae_opts("{type: mae, experts: h-2}", 2), Catch::Contains("model.heads = 2"));
}

TEST_CASE("mae: per-head weights from expert weights", "[layers][mae]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  for (const std::string name : {"MAE-3", "MAE-2"}) {  // h = 4: E = 4 and E = 6
    INFO(name);
    const MaeOptions o = mae_opts("{type: mae, name: " + name + "}");
    const int64_t e = o.experts();
    const double c = 4.0 / (4 - o.dropped);
    // Uniform: every head weighs 1 (the MHA identity of Eq. 5).
    const auto uni = mae_head_weights(g.input(Tensor::from_vector(std::vector<double>(e, 1.0 / e), Shape{1, e})), o)
                         .val()
                         .to_vector<double>();
    for (double w : uni) CHECK(w == Approx(1.0).epsilon(1e-15));
    // One-hot expert k: its dropped heads weigh 0, the others c.
    for (int k = 0; k < e; ++k) {
      Expr onehot = mae_one_hot(g.input(Tensor::from_vector(std::vector<int32_t>{k}, Shape{1, 1})), e, DType::f64);
      CHECK(mae_head_weights(onehot, o).val().to_vector<double>() == test::expert_omega(o, k, 1).to_vector<double>());
    }
    // A mixture: w_l = c (1 - sum of the weights of the experts that drop l).
    const Tensor q = test::random_tensor(Shape{3, e}, 4, 0, 1);
    const auto w = mae_head_weights(g.input(q), o).val().to_vector<double>(), qv = q.to_vector<double>();
    for (int64_t r = 0; r < 3; ++r)
      for (int l = 0; l < 4; ++l) {
        double drop = 0;
        for (int k = 0; k < e; ++k)
          if (test::expert_omega(o, k, 1).to_vector<double>()[l] == 0) drop += qv[r * e + k];
        CHECK(w[r * 4 + l] == Approx(c * (1 - drop)).epsilon(1e-14));
      }
  }
}

TEST_CASE("mae: a uniform gate is exactly multi-head attention", "[layers][mae]") {
  const Tensor x = test::random_tensor(Shape{3, 5, D}, 7);
  for (const std::string name : {"MAE-3", "MAE-2"}) {
    for (const std::string policy : {"full_mean", "causal_prefix_mean"}) {
      INFO(name << " " << policy);
      const MaeOptions o = mae_opts("{type: mae, name: " + name + ", gate_input: {lm_self: " + policy + "}}");
      ParameterStore store(Device::cpu(), 3);
      declare(store, o, SiteRole::lm_self);
      test::set_values(store, "site.gate.l2.w", std::vector<double>(o.gate_hidden * o.experts(), 0.0));
      const auto want = reference(store, x, Tensor(), true);
      for (const bool training : {false, true}) {
        const auto got = site(store, o, x, test::f64_graph(training), ExpertChoice::mixture, true, SiteRole::lm_self);
        CHECK(test::max_abs_diff(got, want) < 1e-12);
      }
    }
  }
  // UNI-MAE: no gate parameters at all, and its mixture is MHA bit for bit.
  const MaeOptions uni = mae_opts("{type: mae, name: UNI-MAE-3}");
  ParameterStore store(Device::cpu(), 3);
  declare(store, uni);
  for (const ParamEntry& e : store.entries()) CHECK(e.name.find("gate") == std::string::npos);
  CHECK(store.entries().size() == 8);  // q, k, v, o weights and biases
  Graph g(Device::cpu(), &store, test::f64_graph(false));
  const auto mha = multi_head_attention(Builder(g, "site"), test::self_input(g.input(x), false), D, 4).val();
  CHECK(site(store, uni, x, test::f64_graph(false)) == mha.to_vector<double>());
}

TEST_CASE("mae: an F step is MHA with the drawn expert's heads dropped", "[layers][mae]") {
  const Tensor x = test::random_tensor(Shape{6, 3, D}, 8);
  for (const std::string name : {"MAE-3", "MAE-2", "UNI-MAE-3", "UNI-MAE-2"}) {
    INFO(name);
    const MaeOptions o = mae_opts("{type: mae, name: " + name + "}");
    ParameterStore store(Device::cpu(), 4);
    declare(store, o);
    const auto got = site(store, o, x, test::f64_graph(true, 3), ExpertChoice::sample);
    std::vector<std::vector<double>> refs;
    for (int e = 0; e < o.experts(); ++e) refs.push_back(reference(store, x, test::expert_omega(o, e, 6)));
    std::set<int> drawn;
    for (int64_t s = 0; s < 6; ++s) {  // each sentence matches exactly one expert
      int matches = 0;
      for (int e = 0; e < o.experts(); ++e)
        if (test::max_abs_diff(row(got, s, 3 * D), row(refs[static_cast<size_t>(e)], s, 3 * D)) < 1e-12) {
          ++matches;
          drawn.insert(e);
        }
      CHECK(matches == 1);
    }
    CHECK(drawn.size() > 1);  // sentences drop different heads
    // Same seed and step: the same draws; another step: other draws.
    CHECK(site(store, o, x, test::f64_graph(true, 3), ExpertChoice::sample) == got);
    CHECK(site(store, o, x, test::f64_graph(true, 4), ExpertChoice::sample) != got);
  }
}

TEST_CASE("mae: F-step gradients: zero for the dropped heads, h/(h-1)-scaled for the others", "[layers][mae]") {
  const Tensor x = test::random_tensor(Shape{1, 4, D}, 9);
  const std::vector<double> seed = test::random_tensor(Shape{1, 4, D}, 10).to_vector<double>();
  for (const std::string name : {"MAE-3", "MAE-2"}) {
    const MaeOptions o = mae_opts("{type: mae, name: " + name + "}");
    ParameterStore store(Device::cpu(), 6);
    declare(store, o);
    auto grads = [&](bool mae) {
      store.zero_grads();
      Graph g(Device::cpu(), &store, test::f64_graph(true, 1));
      Builder b(g, "site");
      b.context().experts = ExpertChoice::sample;
      const AttentionInput in = test::self_input(g.input(x), false);
      Expr out =
          mae ? mae_attention_layer(b, in, D, o, SiteRole::encoder_self) : test::mha_reference(b, in, D, 4, Tensor());
      g.backward_from(out, Tensor::from_vector(seed, out.shape()));
      std::map<std::string, std::vector<double>> gr;
      for (const ParamEntry& e : store.entries()) gr[e.name] = store.grad(e.name).to_vector<double>();
      return std::make_pair(out.val().to_vector<double>(), gr);
    };
    const auto [out, f] = grads(true);
    const auto [mha, ref] = grads(false);
    int expert = -1;
    for (int e = 0; e < o.experts(); ++e)
      if (test::max_abs_diff(out, reference(store, x, test::expert_omega(o, e, 1))) < 1e-12) expert = e;
    REQUIRE(expert >= 0);
    const auto omega = test::expert_omega(o, expert, 1).to_vector<double>();
    INFO(name << " drew expert " << expert);
    for (const auto& [param, g] : f) {
      INFO(param);
      if (param.find(".gate.") != std::string::npos) {
        for (double v : g) CHECK(v == 0.0);  // an F step updates no gate
        continue;
      }
      const auto& r = ref.at(param);
      const bool rows = param == "site.o.w";  // o.w [d, d]: head l owns rows; q/k/v own columns
      for (size_t i = 0; i < g.size(); ++i) {
        const int64_t head = param == "site.o.b" ? -1 : (rows ? int64_t(i) / D : int64_t(i) % D) / 2;
        const double scale = head < 0 ? 1.0 : omega[static_cast<size_t>(head)];  // b^O is not scaled
        if (scale == 0)
          CHECK(g[i] == 0.0);
        else
          CHECK(g[i] == Approx(scale * r[i]).epsilon(1e-5).margin(1e-7));
      }
    }
  }
}

TEST_CASE("mae: F draws follow the gate, per sentence or per position", "[layers][mae]") {
  // A gate fixed by its output bias (l2.w = 0): g = [0.1, 0.2, 0.3, 0.4] for every input.
  const int64_t b = 1500;
  const Tensor x = test::random_tensor(Shape{b, 1, D}, 11);
  for (const std::string yaml : {"{type: mae}", "{type: mae, gate: uniform}"}) {
    INFO(yaml);
    const MaeOptions o = mae_opts(yaml);
    ParameterStore store(Device::cpu(), 2);
    declare(store, o);
    std::vector<double> want(4, 0.25);
    if (o.gate == MaeGate::learned) {
      want = {0.1, 0.2, 0.3, 0.4};
      test::set_values(store, "site.gate.l2.w", std::vector<double>(o.gate_hidden * 4, 0.0));
      test::set_values(store, "site.gate.l2.b", {std::log(0.1), std::log(0.2), std::log(0.3), std::log(0.4)});
    }
    const auto got = site(store, o, x, test::f64_graph(true, 2), ExpertChoice::sample);
    std::vector<double> freq(4, 0);
    std::vector<std::vector<double>> refs;
    for (int e = 0; e < 4; ++e) refs.push_back(reference(store, x, test::expert_omega(o, e, b)));
    for (int64_t s = 0; s < b; ++s)
      for (int e = 0; e < 4; ++e)
        if (test::max_abs_diff(row(got, s, D), row(refs[static_cast<size_t>(e)], s, D)) < 1e-12) freq[e] += 1.0 / b;
    for (int e = 0; e < 4; ++e)
      CHECK(freq[static_cast<size_t>(e)] == Approx(want[static_cast<size_t>(e)]).margin(0.04));
  }
  // Per-position gates draw per position: the positions of one sentence drop different heads.
  const MaeOptions o = mae_opts("{type: mae, gate_input: {lm_self: causal_prefix_mean}}");
  ParameterStore store(Device::cpu(), 2);
  declare(store, o, SiteRole::lm_self);
  const Tensor xs = test::random_tensor(Shape{2, 6, D}, 12);
  const auto got = site(store, o, xs, test::f64_graph(true, 5), ExpertChoice::sample, true, SiteRole::lm_self);
  std::set<int> experts;
  for (int64_t p = 0; p < 6; ++p)
    for (int e = 0; e < 4; ++e)
      if (test::max_abs_diff(row(got, p, D), row(reference(store, xs, test::expert_omega(o, e, 2), true), p, D)) <
          1e-12)
        experts.insert(e);
  CHECK(experts.size() > 1);
}

TEST_CASE("mae: G-step gradients reach the gate (finite differences)", "[layers][mae][grad]") {
  for (const std::string yaml :
       {"{type: mae, gate_hidden: 5}", "{type: mae, name: MAE-2, gate_hidden: 5}",
        "{type: mae, gate_hidden: 5, gate_input: {lm_self: causal_window_mean}, gate_window: 2}"}) {
    INFO(yaml);
    const MaeOptions o = mae_opts(yaml);
    const bool lm = yaml.find("lm_self") != std::string::npos;
    const SiteRole role = lm ? SiteRole::lm_self : SiteRole::encoder_self;
    ParameterStore store(Device::cpu(), 8);
    declare(store, o, role);
    const Tensor x = test::random_tensor(Shape{3, 4, D}, 13, -2, 2);
    auto build = [&](Graph& g) {
      Builder b(g, "site");
      b.context().experts = ExpertChoice::mixture;
      return mae_attention_layer(b, test::self_input(g.input(x), lm), D, o, role);
    };
    const std::vector<std::string> gate = {"site.gate.bn.g", "site.gate.bn.b", "site.gate.l1.w",
                                           "site.gate.l1.b", "site.gate.l2.w", "site.gate.l2.b"};
    CHECK(test::store_gradcheck(store, gate, build, test::f64_graph(true, 1)) < 1e-4);
    double norm = 0;
    for (const std::string& p : gate)
      for (double v : store.grad(p).to_vector<double>()) norm += v * v;
    CHECK(norm > 1e-6);
  }
  // The gate alone, explicit f64 weights and batch statistics (no running statistics).
  const MaeOptions o = mae_opts("{type: mae, gate_hidden: 3, gate_dropout: 0}");
  const std::vector<Tensor> in = {test::random_tensor(Shape{5, D}, 20), test::random_tensor(Shape{D}, 21, 0.5, 1.5),
                                  test::random_tensor(Shape{D}, 22),    test::random_tensor(Shape{D, 3}, 23),
                                  test::random_tensor(Shape{3}, 24),    test::random_tensor(Shape{3, 4}, 25),
                                  test::random_tensor(Shape{4}, 26)};
  CHECK(test::gradcheck(in, [&](Graph&, const std::vector<Expr>& l) {
          return mae_gate_probs(l[0], MaeGateWeights{l[1], l[2], l[3], l[4], l[5], l[6], {}, {}}, o, GateNorm::batch,
                                true);
        }) < 1e-6);
}

TEST_CASE("mae: argmax inference uses the most-weighted expert", "[layers][mae]") {
  const Tensor x = test::random_tensor(Shape{2, 3, D}, 14);
  const MaeOptions o = mae_opts("{type: mae}");
  ParameterStore store(Device::cpu(), 2);
  declare(store, o);
  test::set_values(store, "site.gate.l2.w", std::vector<double>(o.gate_hidden * 4, 0.0));
  test::set_values(store, "site.gate.l2.b", {0.1, 0.5, 0.2, 0.4});  // expert 1
  const ExpertChoice argmax = ExpertChoice::argmax;
  CHECK(test::max_abs_diff(site(store, o, x, test::f64_graph(false), argmax),
                           reference(store, x, test::expert_omega(o, 1, 2))) < 1e-12);
  // The mixture differs from the single expert; UNI-MAE's tie goes to expert 0.
  CHECK(test::max_abs_diff(site(store, o, x, test::f64_graph(false)),
                           reference(store, x, test::expert_omega(o, 1, 2))) > 1e-6);
  const MaeOptions uni = mae_opts("{type: mae, gate: uniform}");
  CHECK(test::max_abs_diff(site(store, uni, x, test::f64_graph(false), argmax),
                           reference(store, x, test::expert_omega(uni, 0, 2))) < 1e-12);
}

TEST_CASE("mae: batch-norm running statistics update in training and serve eval", "[layers][mae]") {
  const MaeOptions o = mae_opts("{type: mae, gate_hidden: 3}");
  ParameterStore store(Device::cpu(), 2);
  declare(store, o);
  const int64_t b = 4, t = 3;
  const Tensor x = test::random_tensor(Shape{b, t, D}, 15, -1, 3);
  const auto xv = x.to_vector<double>();
  std::vector<double> u(b * D, 0.0), mu(D, 0.0), var(D, 0.0);  // full_mean gate inputs and their statistics
  for (int64_t s = 0; s < b; ++s)
    for (int64_t p = 0; p < t; ++p)
      for (int64_t c = 0; c < D; ++c) u[s * D + c] += xv[(s * t + p) * D + c] / t;
  for (int64_t s = 0; s < b; ++s)
    for (int64_t c = 0; c < D; ++c) mu[c] += u[s * D + c] / b;
  for (int64_t s = 0; s < b; ++s)
    for (int64_t c = 0; c < D; ++c) var[c] += (u[s * D + c] - mu[c]) * (u[s * D + c] - mu[c]) / (b - 1);
  site(store, o, x, test::f64_graph(true), ExpertChoice::mixture);
  const auto rm = test::values(store, "site.gate.bn.mean"), rv = test::values(store, "site.gate.bn.var");
  for (int64_t c = 0; c < D; ++c) {
    CHECK(rm[c] == Approx(0.1 * mu[c]).epsilon(1e-5));
    CHECK(rv[c] == Approx(0.9 + 0.1 * var[c]).epsilon(1e-5));
  }
  // One sentence in training: normalised by the running statistics, which stay as they are.
  site(store, o, test::random_tensor(Shape{1, t, D}, 16), test::f64_graph(true), ExpertChoice::mixture);
  CHECK(test::values(store, "site.gate.bn.mean") == rm);
  // Eval: the gate normalises with the running statistics (recorded probabilities = a hand computation).
  GateRecorder rec;
  {
    Graph g(Device::cpu(), &store, test::f64_graph(false));
    Builder bld(g, "site");
    bld.context().recorder = &rec;
    mae_attention_layer(bld, test::self_input(g.input(x), false), D, o, SiteRole::encoder_self);
  }
  REQUIRE(rec.records().at("site").size() == 1);
  const auto probs = rec.records().at("site")[0].probs.to_vector<double>();
  const auto gam = test::values(store, "site.gate.bn.g"), bet = test::values(store, "site.gate.bn.b");
  const auto w1 = test::values(store, "site.gate.l1.w"), b1 = test::values(store, "site.gate.l1.b");
  const auto w2 = test::values(store, "site.gate.l2.w"), b2 = test::values(store, "site.gate.l2.b");
  for (int64_t s = 0; s < b; ++s) {
    std::vector<double> h(3), z(4);
    for (int j = 0; j < 3; ++j) {
      h[j] = b1[j];
      for (int64_t c = 0; c < D; ++c)
        h[j] += ((u[s * D + c] - rm[c]) / std::sqrt(rv[c] + 1e-5) * gam[c] + bet[c]) * w1[c * 3 + j];
      h[j] = std::tanh(h[j]);
    }
    double sum = 0;
    for (int e = 0; e < 4; ++e) {
      z[e] = b2[e];
      for (int j = 0; j < 3; ++j) z[e] += h[j] * w2[j * 4 + e];
      sum += std::exp(z[e]);
    }
    for (int e = 0; e < 4; ++e) CHECK(probs[s * 4 + e] == Approx(std::exp(z[e]) / sum).epsilon(1e-6));
  }
}

TEST_CASE("mae: missing gate inputs are errors", "[layers][mae][errors]") {
  const MaeOptions o = mae_opts("{type: mae, gate_input: {decoder_self: source_mean}}");
  ParameterStore store(Device::cpu(), 2);
  declare(store, o);
  const Tensor x = test::random_tensor(Shape{2, 3, D}, 17);
  CHECK_THROWS_WITH(site(store, o, x, test::f64_graph(false), ExpertChoice::mixture, true, SiteRole::decoder_self),
                    Catch::Contains("source_mean") && Catch::Contains("[2,8]"));
}
