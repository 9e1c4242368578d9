// Causality probe of a left-to-right model (issue 14), shared by tests/models/causality_test.cpp:
// rows x_0..x_T of tokens; the model reads inputs x_0..x_T-1 and predicts targets x_1..x_T. Changing
// x_t of row r must leave unchanged
//   - the outputs at input positions p < t of row r (they read x_0..x_p), and
//   - the loss terms -log p(x_p | x_<p) of targets p < t of row r (the target x_t itself changes),
//   - everything of the other rows (when `rows_independent`: no statistic couples the rows),
// while the output at position t must move (the probe sees the change at all). Each evaluation is a
// fresh graph (training mode: dropout as configured, same seed and step; or inference) on the same
// parameters and state: the store is restored before each graph, as running statistics (MAE gate
// norms) are updated in place by training graphs. Per-position loss terms: the model's own summed
// training loss with a one-hot mask, so the loss path (adaptive softmax, label masks) is the real one.
// Auxiliary (load-balancing) losses are per batch by design and are not compared.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "layers/builder.h"
#include "support/store_snapshot.h"

namespace moe::test {

using Rows = std::vector<std::vector<int32_t>>;

struct CausalProbe {
  /// Outputs [B * T, K] (f32 or f64) for inputs [B, T] (i32).
  std::function<Expr(const Builder&, const Tensor& input)> outputs;
  /// The summed training loss of the targets [B, T] where mask [B, T] (f32) is 1.
  std::function<Expr(const Builder&, const Tensor& input, const Tensor& target, const Tensor& mask)> loss;
  ExpertChoice experts = ExpertChoice::mixture;  // the graphs' BuildContext::experts (MAE passes)
};

/// What a probe measured over every change: the largest change where none may be, and the smallest
/// (over changes) largest change of the output at the changed position.
struct CausalReport {
  double before = 0, other_rows = 0, at = 1e30;
};

namespace causal_detail {
inline Tensor slice(const Rows& rows, size_t from) {
  std::vector<int32_t> v;
  const size_t len = rows[0].size() - 1;
  for (const auto& r : rows)
    v.insert(v.end(), r.begin() + static_cast<std::ptrdiff_t>(from),
             r.begin() + static_cast<std::ptrdiff_t>(from + len));
  return Tensor::from_vector(v, Shape{static_cast<int64_t>(rows.size()), static_cast<int64_t>(len)});
}

struct Observation {
  std::vector<double> outputs;  // [B * T, K]
  std::vector<double> loss;     // [B * T]: the loss term of target p of row b at b * T + p
  int64_t width = 0;            // K
};

inline Observation observe(const CausalProbe& probe, ParameterStore& store, const Rows& rows, bool training,
                           const std::vector<std::vector<double>>* state) {
  const int64_t b = static_cast<int64_t>(rows.size()), len = static_cast<int64_t>(rows[0].size()) - 1;
  const Tensor input = slice(rows, 0), target = slice(rows, 1);
  auto run = [&](const std::function<Expr(const Builder&)>& build) {
    if (state) restore(store, *state);
    Graph g(Device::cpu(), &store, GraphOptions{.training = training, .seed = 5, .step = 3});
    Builder builder(g);
    builder.context().experts = probe.experts;
    Expr e = build(builder);
    g.forward();
    return std::make_pair(e.val().to_vector<double>(), e.shape());
  };
  Observation o;
  auto [out, shape] = run([&](const Builder& bl) { return probe.outputs(bl, input); });
  o.outputs = std::move(out);
  o.width = shape.last();
  REQUIRE(shape.numel() == b * len * o.width);
  for (int64_t i = 0; i < b * len; ++i) {
    std::vector<float> m(static_cast<size_t>(b * len), 0.f);
    m[static_cast<size_t>(i)] = 1.f;
    const Tensor mask = Tensor::from_vector(m, Shape{b, len});
    o.loss.push_back(run([&](const Builder& bl) { return probe.loss(bl, input, target, mask); }).first.at(0));
  }
  return o;
}

inline double span_diff(const std::vector<double>& a, const std::vector<double>& c, int64_t begin, int64_t end) {
  double worst = 0;
  for (int64_t i = begin; i < end; ++i) worst = std::max(worst, std::abs(a[i] - c[i]));
  return worst;
}
}  // namespace causal_detail

/// Runs the probe on `rows` (equal lengths, T + 1 tokens) and on every variant with x_t of row r
/// replaced (t in `positions`, 1 <= t < T, every row; the new token is `replace(old)`). The first
/// evaluation declares the parameters; the state after it is what every later graph starts from.
inline CausalReport probe_causality(const CausalProbe& probe, ParameterStore& store, const Rows& rows, bool training,
                                    const std::vector<int64_t>& positions,
                                    const std::function<int32_t(int32_t)>& replace) {
  using namespace causal_detail;
  observe(probe, store, rows, training, nullptr);  // declares
  const auto state = snapshot(store);
  const Observation base = observe(probe, store, rows, training, &state);
  const int64_t len = static_cast<int64_t>(rows[0].size()) - 1, k = base.width;
  CausalReport rep;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t t : positions) {
      REQUIRE((t >= 1 && t < len));
      Rows changed = rows;
      int32_t& x = changed[r][static_cast<size_t>(t)];
      x = replace(x);
      const Observation c = observe(probe, store, changed, training, &state);
      const int64_t row = static_cast<int64_t>(r) * len;
      rep.before = std::max(rep.before, span_diff(base.outputs, c.outputs, row * k, (row + t) * k));
      // Loss term of target p sits at input position p - 1: targets 1..t-1 are positions 0..t-2.
      rep.before = std::max(rep.before, span_diff(base.loss, c.loss, row, row + t - 1));
      rep.at = std::min(rep.at, span_diff(base.outputs, c.outputs, (row + t) * k, (row + t + 1) * k));
      for (size_t o = 0; o < rows.size(); ++o)
        if (o != r) {
          const int64_t orow = static_cast<int64_t>(o) * len;
          rep.other_rows = std::max({rep.other_rows, span_diff(base.outputs, c.outputs, orow * k, (orow + len) * k),
                                     span_diff(base.loss, c.loss, orow, orow + len)});
        }
    }
  return rep;
}

}  // namespace moe::test
