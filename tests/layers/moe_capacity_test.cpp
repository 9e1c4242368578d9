// Token capacity (lib/layers/moe_capacity.h): C = ceil(f rows k / n); each expert keeps its first C
// assignments in token order and the rest contribute nothing (against a direct computation: which pairs
// are dropped, the combine weights, the output), the capacity is exactly respected (no expert's buffer
// holds more than C rows, and the output equals the dropless layer with the dropped pairs removed),
// finite-difference gradients (f64), and the layer with a capacity factor in training and inference.
#include "layers/moe_capacity.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "graph/expr/gather_scatter.h"
#include "graph/expr/shape_ops.h"
#include "layers/moe_ffn.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
using Vec = std::vector<double>;

/// The assignments (token-major, k per token) that capacity c keeps, in token order per expert.
std::vector<int> kept_by_capacity(const std::vector<int32_t>& expert, int n, int64_t c) {
  std::vector<int64_t> used(static_cast<size_t>(n), 0);
  std::vector<int> keep(expert.size(), 0);
  for (size_t a = 0; a < expert.size(); ++a)
    if (used[static_cast<size_t>(expert[a])]++ < c) keep[a] = 1;
  return keep;
}
}  // namespace

TEST_CASE("token capacity: C = max(1, ceil(f rows k / n))", "[layers][moe][capacity]") {
  CHECK(token_capacity(1.25, 10, 1, 4) == 4);   // 3.125
  CHECK(token_capacity(1.0, 8, 2, 4) == 4);     // exactly 4
  CHECK(token_capacity(2.0, 3, 1, 8) == 1);     // 0.75
  CHECK(token_capacity(0.01, 10, 1, 64) == 1);  // at least one
  CHECK_THROWS_WITH(token_capacity(0, 10, 1, 4), Catch::Contains("factor 0"));
  const CapacityCount n = count_capacity({0, 0, 0, 1, 2, 0, 1}, 3, 2);
  CHECK((n.pairs == 7 && n.dropped == 2 && n.kept == 5 && n.slots == 6));
}

TEST_CASE("token capacity: each expert keeps its first C assignments in token order, the rest pass nothing",
          "[layers][moe][capacity]") {
  const int64_t N = 7, d = 4, h = 5;
  const int n = 3, k = 2;
  // Expert 0 is everybody's first choice: 7 assignments for C = 3.
  const std::vector<int32_t> expert = {0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 2, 0, 0, 1};
  const Tensor x = test::random_tensor(Shape{N, d}, 1), wt = test::random_tensor(Shape{N * k, 1}, 2, 0.1, 1);
  const Tensor w1 = test::random_tensor(Shape{n, d, h}, 3), w2 = test::random_tensor(Shape{n, h, d}, 4);
  const int64_t c = token_capacity(1.0, N, k, n);  // ceil(14 / 3) = 5
  REQUIRE(c == 5);
  for (int64_t cap : {c, int64_t{3}, int64_t{1}}) {
    INFO("capacity " << cap);
    const std::vector<int> keep = kept_by_capacity(expert, n, cap);
    auto capped = [&](Graph& g, const std::vector<Expr>& in) {
      const Routing r{g.input(Tensor::from_vector(expert, Shape{N * k})), in[1], Expr(), k};
      return moe_dispatch_capacity(in[0], r, n, cap, ExpertWeights{{in[2], in[3]}, {}}, true, nullptr);
    };
    // The dropless dispatch of the kept assignments alone.
    auto reference = [&](Graph& g, const std::vector<Expr>& in) {
      std::vector<int32_t> ids, tok, pos;
      for (size_t a = 0; a < expert.size(); ++a)
        if (keep[a]) ids.push_back(expert[a]), tok.push_back(int32_t(a / k)), pos.push_back(int32_t(a));
      const int64_t m = static_cast<int64_t>(ids.size());
      const Expr w = index_select(in[1], g.input(Tensor::from_vector(pos, Shape{m})));
      const Routing r{g.input(Tensor::from_vector(ids, Shape{m})), w, g.input(Tensor::from_vector(tok, Shape{m})), 1};
      return moe_dispatch(in[0], r, ExpertWeights{{in[2], in[3]}, {}}, true);
    };
    const Vec y = test::evaluate({x, wt, w1, w2}, capped).to_vector<double>();
    const Vec ref = test::evaluate({x, wt, w1, w2}, reference).to_vector<double>();
    for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-12));
    // Exactly respected: at most C pairs per expert, and every one of its first C kept.
    std::vector<int64_t> per(static_cast<size_t>(n), 0);
    for (size_t a = 0; a < expert.size(); ++a) per[static_cast<size_t>(expert[a])] += keep[a];
    for (int e = 0; e < n; ++e) {
      const int64_t all = std::count(expert.begin(), expert.end(), e);
      CHECK(per[static_cast<size_t>(e)] == std::min(all, cap));
    }
    const CapacityCount counts = count_capacity(expert, n, cap);
    CHECK(counts.kept == std::accumulate(keep.begin(), keep.end(), int64_t{0}));
    // Gradients into the tokens, the gate weights and the experts.
    CHECK(test::gradcheck({x, wt, w1, w2}, capped) < 1e-6);
  }
  // Capacity 1: token 0 keeps both its experts, token 1 loses expert 0 but keeps 2 (C counts per expert).
  const Vec y1 = test::evaluate({x, wt, w1, w2}, [&](Graph& g, const std::vector<Expr>& in) {
                   const Routing r{g.input(Tensor::from_vector(expert, Shape{N * k})), in[1], Expr(), k};
                   return moe_dispatch_capacity(in[0], r, n, 1, ExpertWeights{{in[2], in[3]}, {}}, true, nullptr);
                 }).to_vector<double>();
  for (int64_t t = 3; t < N; ++t)  // tokens 3.. find every expert full: their outputs are 0
    for (int64_t j = 0; j < d; ++j) CHECK(y1[t * d + j] == 0.0);
}

TEST_CASE("token capacity in the layer: training's factor, then eval_capacity_factor", "[layers][moe][capacity]") {
  const int64_t N = 12, d = 4, h = 6;
  const Tensor x = test::random_tensor(Shape{N, d}, 11), wg = test::random_tensor(Shape{d, 4}, 12, -2, 2);
  const Tensor w1 = test::random_tensor(Shape{4, d, h}, 13), w2 = test::random_tensor(Shape{4, h, d}, 14);
  const MoeOptions o = moe_options_from_yaml(
      YAML::Load("{type: moe, gating: switch, experts: 4, k: 1, capacity_factor: 1.0, eval_capacity_factor: 0}"), d, h);
  for (bool training : {true, false}) {
    INFO("training " << training);
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = training});
    MoeWeights w;
    w.w_gate = g.input(wg);
    w.experts.layers = {g.input(w1), g.input(w2)};
    const MoeOutput out = moe_forward(g.input(x), w, o, {}, {}, training);
    g.forward();
    CHECK(out.capacity == (training ? 3 : 0));
    const std::vector<int32_t> ex = out.routing.expert.val().to_vector<int32_t>();
    const std::vector<int> keep = training ? kept_by_capacity(ex, 4, 3) : std::vector<int>(ex.size(), 1);
    const Vec y = out.y.val().to_vector<double>();
    // A dropped token passes nothing (the residual carries it in a model); a kept one its expert's output.
    MoeOptions dropless = o;
    dropless.capacity_factor = 0;
    Graph g2(Device::cpu(), nullptr, GraphOptions{.training = false});
    MoeWeights w2e;
    w2e.w_gate = g2.input(wg);
    w2e.experts.layers = {g2.input(w1), g2.input(w2)};
    const Vec full = moe_forward(g2.input(x), w2e, dropless, {}, {}, false).y.val().to_vector<double>();
    int dropped = 0;
    for (int64_t t = 0; t < N; ++t) {
      dropped += !keep[static_cast<size_t>(t)];
      for (int64_t j = 0; j < d; ++j)
        CHECK(y[t * d + j] == Approx(keep[static_cast<size_t>(t)] ? full[t * d + j] : 0.0).margin(1e-12));
    }
    if (training) CHECK(dropped > 0);  // the random gate overloads some expert at factor 1
  }
}
