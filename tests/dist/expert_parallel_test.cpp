// Expert parallelism (lib/layers/moe_ffn_expert_parallel.h) against the single-process layer: rank r
// holds 2 of the 2N experts and its own tokens (a different number per rank); the reference is the
// ordinary layer with all experts on the tokens of all ranks, which every rank computes. Outputs, the
// gradients of the tokens, of the gates (summed over ranks, as data parallelism does) and of this
// rank's experts must agree, with the balancing losses of the global batch. Flat top-k and the
// hierarchical gate, with and without expert biases. The routers after 2017 (Switch with a token capacity,
// expert choice within sentences, loss-free balancing with its bias step, shared experts, the z-loss)
// against the same layer in one process holding every expert on the rank's own tokens, with the
// statistics of the global batch (a token capacity is per rank's batch, as GShard's per group): one
// process equals the expert-parallel ranks. ctest runs it with 1, 2 and 4 processes.
#include <catch2/catch.hpp>

#include "dist/collective_exprs.h"
#include "dist_test_util.h"
#include "graph/expr/binary.h"
#include "graph/expr/reduce.h"
#include "graph/expr/unary.h"
#include "layers/moe_ffn.h"
#include "layers/moe_ffn_expert_parallel.h"
#include "support/random_normal.h"

using namespace moe;
using moe::test::comm;

namespace {

int64_t tokens_of(int rank) { return 5 + 3 * rank; }

struct Result {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> dw;  // gate weights, then expert layers, then biases
};

/// The layer on x (rows [first, first + rows) of every rank's tokens, concatenated) with the full
/// weights; `local` selects rank r's experts and the expert-parallel path. Loss: sum(y * c) + the
/// balancing losses weighted by this process's share of the tokens.
Result run(const MoeOptions& opt, int64_t first, int64_t rows, int64_t all_rows, bool local) {
  dist::Communicator& c = comm();
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = true});
  const int64_t d = opt.dim, n = opt.experts, h = opt.hidden;
  const bool hier = opt.groups > 1;
  const int64_t first_gate = hier ? opt.groups : n;
  std::vector<Expr> params;
  auto leaf = [&](const Tensor& t) {
    params.push_back(g.input(t, true));
    return params.back();
  };
  auto experts_of = [&](const Tensor& full) {
    if (!local) return full;
    const int64_t e = opt.experts_per_rank;
    return full.rows(c.rank() * e, e).clone();
  };
  MoeWeights w;
  w.w_gate = leaf(test::random_normal(Shape{d, first_gate}, 11, 0.5f));
  if (hier) w.w_gate2 = leaf(test::random_normal(Shape{opt.groups, d, n / opt.groups}, 12, 0.5f));
  for (int l = 0; l <= opt.hidden_layers; ++l) {
    const int64_t in = l == 0 ? d : h, out = l == opt.hidden_layers ? d : h;
    w.experts.layers.push_back(leaf(experts_of(test::random_normal(Shape{n, in, out}, 20 + l, 0.3f))));
  }
  for (int l = 0; opt.expert_bias && l <= opt.hidden_layers; ++l)
    w.experts.biases.push_back(leaf(experts_of(test::random_normal(Shape{n, l == opt.hidden_layers ? d : h}, 40 + l))));
  const Tensor x_all = test::random_normal(Shape{all_rows, d}, 7);
  const Tensor c_all = test::random_normal(Shape{all_rows, d}, 8);
  const Expr x = g.input(x_all.rows(first, rows).clone(), true);
  const MoeOutput out = moe_forward(x, w, opt, GateNoise{}, GateNoise{}, true, local ? &c : nullptr);
  Expr loss = sum_all(out.y * g.input(c_all.rows(first, rows).clone()));
  const float share = static_cast<float>(rows) / static_cast<float>(all_rows);
  loss = loss + scale(out.importance_loss, 0.1f * share);
  if (out.load_loss.defined()) loss = loss + scale(out.load_loss, 0.1f * share);
  g.backward(loss);
  Result r;
  r.y = out.y.val().to_vector<float>();
  r.dx = x.grad().to_vector<float>();
  for (const Expr& p : params) r.dw.push_back(p.grad().to_vector<float>());
  return r;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-5).epsilon(1e-4));
}

void check_layer(MoeOptions opt) {
  dist::Communicator& c = comm();
  const int world = c.world(), rank = c.rank();
  opt.experts = opt.experts_per_rank * world;
  if (opt.groups > 1) opt.groups = world;  // one group per rank's experts
  validate(opt);
  int64_t all = 0, first = 0;
  for (int r = 0; r < world; ++r) {
    if (r == rank) first = all;
    all += tokens_of(r);
  }
  const Result ref = run(opt, 0, all, all, false);
  const Result mine = run(opt, first, tokens_of(rank), all, true);
  const size_t d = static_cast<size_t>(opt.dim);
  const auto rows_of = [&](const std::vector<float>& v) {
    return std::vector<float>(v.begin() + first * d, v.begin() + (first + tokens_of(rank)) * d);
  };
  check_close(mine.y, rows_of(ref.y), "outputs");
  check_close(mine.dx, rows_of(ref.dx), "token gradients");
  const size_t gates = opt.groups > 1 ? 2 : 1;
  REQUIRE(mine.dw.size() == ref.dw.size());
  for (size_t p = 0; p < ref.dw.size(); ++p) {
    std::vector<float> got = mine.dw[p], want = ref.dw[p];
    if (p < gates) {  // replicated: data parallelism sums the ranks' gradients
      Tensor t = Tensor::from_vector(got, Shape{static_cast<int64_t>(got.size())});
      c.all_reduce(t);
      got = t.to_vector<float>();
    } else {  // this rank's experts: the matching part of the full gradient
      const size_t per = want.size() / static_cast<size_t>(opt.experts) * static_cast<size_t>(opt.experts_per_rank);
      want = std::vector<float>(want.begin() + rank * per, want.begin() + (rank + 1) * per);
    }
    check_close(got, want, p < gates ? "gate gradients" : "expert gradients");
  }
}

}  // namespace

TEST_CASE("dist: expert-parallel MoE layer equals the single-process layer", "[dist][expert_parallel]") {
  MoeOptions opt;
  opt.dim = 8;
  opt.hidden = 6;
  opt.k = 2;
  opt.noisy = false;
  opt.experts_per_rank = 2;
  SECTION("flat top-2") { check_layer(opt); }
  SECTION("flat top-2, two hidden layers and biases") {
    opt.hidden_layers = 2;
    opt.expert_bias = true;
    check_layer(opt);
  }
  SECTION("hierarchical") {
    opt.groups = 2;
    opt.k = 1;
    opt.k_secondary = 2;
    if (comm().world() > 1) check_layer(opt);
  }
}

namespace {
/// The layer on this rank's sentences (rank + 1 rows of 4 tokens, the last token of odd rows padding) with
/// every expert (`local` false) or this rank's experts, expert-parallel; both with the global statistics.
/// Loss: sum(y * c) + the aux losses weighted by this rank's share of the tokens. Parameters in `out.dw`:
/// the gate, the shared experts (replicated), then the experts; `bias` gets the loss-free bias after the step.
Result run_routed(const MoeOptions& opt, bool local, std::vector<float>* bias) {
  dist::Communicator& c = comm();
  const int rank = c.rank();
  const int64_t B = rank + 1, T = 4, rows = B * T, d = opt.dim, n = opt.experts, h = opt.hidden;
  int64_t all_rows = 0;
  for (int r = 0; r < c.world(); ++r) all_rows += (r + 1) * T;
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = true});
  std::vector<Expr> params;
  auto leaf = [&](const Tensor& t) {
    params.push_back(g.input(t, true));
    return params.back();
  };
  MoeWeights w;
  w.w_gate = leaf(test::random_normal(Shape{d, n}, 11, 0.5f));
  for (int l = 0; opt.shared > 0 && l <= 1; ++l)
    w.shared.layers.push_back(
        leaf(test::random_normal(Shape{opt.shared, l == 0 ? d : h, l == 0 ? h : d}, 60 + l, 0.3f)));
  for (int l = 0; l <= 1; ++l) {
    const Tensor full = test::random_normal(Shape{n, l == 0 ? d : h, l == 0 ? h : d}, 20 + l, 0.3f);
    const int64_t e = opt.experts_per_rank;
    w.experts.layers.push_back(leaf(local && c.world() > 1 ? full.rows(rank * e, e).clone() : full));
  }
  const Tensor b0 = Tensor::from_vector(std::vector<float>{0.1f, -0.1f, 0.f, 0.2f, 0.f, 0.f, -0.2f, 0.f}, Shape{8});
  if (opt.router->name() == "loss_free") w.router["gate.bias"] = g.input(b0);
  MoeOptions o = opt;
  if (!local) o.experts_per_rank = 0;
  std::vector<uint8_t> pad(static_cast<size_t>(rows), 1);
  for (int64_t r = 1; r < B; r += 2) pad[static_cast<size_t>(r * T + T - 1)] = 0;
  RouterContext ctx;
  ctx.training = true;
  ctx.lead = Shape{B, T};
  ctx.padding = Tensor::from_vector(pad, Shape{B, T});
  ctx.comm = &c;
  const Expr x = g.input(test::random_normal(Shape{rows, d}, 7 + rank), true);
  const MoeOutput out = moe_forward(x, w, o, ctx);
  Expr loss = sum_all(out.y * g.input(test::random_normal(Shape{rows, d}, 8 + rank)));
  const float share = static_cast<float>(rows) / static_cast<float>(all_rows);
  for (const Expr& l : {out.router_loss, out.z_loss, out.importance_loss})
    if (l.defined()) loss = loss + scale(l, 0.1f * share);
  g.backward(loss);
  Result r;
  r.y = out.y.val().to_vector<float>();
  r.dx = x.grad().to_vector<float>();
  for (const Expr& p : params) r.dw.push_back(p.grad().to_vector<float>());
  if (bias) *bias = b0.to_vector<float>();
  return r;
}

void check_routed(MoeOptions opt) {
  dist::Communicator& c = comm();
  opt.experts = 8;
  opt.experts_per_rank = c.world() <= 2 ? 8 / c.world() : 2;
  if (c.world() > 4) return;
  if (c.world() == 4) opt.experts_per_rank = 2;
  if (c.world() == 3) return;  // 8 experts do not spread over 3 ranks
  validate(opt);
  std::vector<float> bias_ref, bias_ep;
  const Result ref = run_routed(opt, false, &bias_ref);
  const Result mine = run_routed(opt, true, &bias_ep);
  check_close(mine.y, ref.y, "outputs");
  check_close(mine.dx, ref.dx, "token gradients");
  CHECK(bias_ep == bias_ref);  // the loss-free step reads the global load on both
  const size_t replicated = 1 + (opt.shared > 0 ? 2 : 0);
  REQUIRE(mine.dw.size() == ref.dw.size());
  for (size_t p = 0; p < ref.dw.size(); ++p) {
    auto summed = [&](std::vector<float> v) {  // data parallelism sums the ranks' gradients
      Tensor t = Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())});
      c.all_reduce(t);
      return t.to_vector<float>();
    };
    std::vector<float> want = summed(ref.dw[p]), got = p < replicated ? summed(mine.dw[p]) : mine.dw[p];
    if (p >= replicated && c.world() > 1) {  // this rank's experts: its rows of the summed full gradient
      const size_t per = want.size() / 8 * static_cast<size_t>(opt.experts_per_rank);
      want = std::vector<float>(want.begin() + c.rank() * per, want.begin() + (c.rank() + 1) * per);
    }
    check_close(got, want, p < replicated ? "replicated gradients" : "expert gradients");
  }
}
}  // namespace

TEST_CASE("dist: expert-parallel ranks equal one process for the routers after 2017", "[dist][expert_parallel]") {
  for (const std::string yaml : {"{type: moe, gating: switch, k: 1, capacity_factor: 1.0, z_loss: 0.01}",
                                 "{type: moe, k: 2, noisy: false, capacity_factor: 0.75}",
                                 "{type: moe, gating: expert_choice, k: 2, shared: 2}"}) {
    INFO(yaml);
    check_routed(moe_options_from_yaml(YAML::Load(yaml), 8, 6));
  }
}

TEST_CASE("dist: expert-parallel ranks equal one process for loss-free balancing, its bias step included",
          "[dist][expert_parallel]") {
  check_routed(
      moe_options_from_yaml(YAML::Load("{type: moe, gating: loss_free, k: 2, bias_rate: 0.5, shared: 2}"), 8, 6));
}

TEST_CASE("dist: all_reduce_sum and all_to_all_rows nodes", "[dist]") {
  dist::Communicator& c = comm();
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = true});
  const Expr x = g.input(Tensor::from_vector(std::vector<float>{1.f + c.rank(), 2.f}, Shape{2}), true);
  const Expr s = dist::all_reduce_sum(c, x);
  g.backward(sum_all(s * s));
  const float total = static_cast<float>(c.world() * (c.world() + 1) / 2);
  CHECK(s.val().to_vector<float>() == std::vector<float>{total, 2.f * c.world()});
  // d/dx_r sum_ranks sum(s^2) = sum over ranks of 2 s = 2 N s.
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2.f * c.world() * total, 4.f * c.world() * c.world()});
}
