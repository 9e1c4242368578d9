// Expert parallelism (lib/layers/moe_ffn_expert_parallel.h) against the single-process layer: rank r
// holds 2 of the 2N experts and its own tokens (a different number per rank); the reference is the
// ordinary layer with all experts on the tokens of all ranks, which every rank computes. Outputs, the
// gradients of the tokens, of the gates (summed over ranks, as data parallelism does) and of this
// rank's experts must agree, with the balancing losses of the global batch. Flat top-k and the
// hierarchical gate, with and without expert biases; ctest runs it with 1, 2 and 4 processes.
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
