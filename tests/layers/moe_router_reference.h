// Helpers of the MoE tests (moe_router_test.cpp, moe_router_loss_free_test.cpp, moe_ffn_test.cpp):
// options from YAML, a direct host computation of an expert relu(x W1[e]) W2[e] (h/d)^-1/2, of gate logits,
// row softmax and top-k indices, a small random layer, the layer's output from (expert, token, gate)
// assignments, and a check of a layer's routing and output against them.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "layers/moe_ffn.h"
#include "support/gradcheck.h"

namespace moe::test {
using Vec = std::vector<double>;

inline MoeOptions options(const std::string& yaml, int64_t d, int64_t h) {
  return moe_options_from_yaml(YAML::Load(yaml), d, h);
}

/// Host expert e: relu(x W1[e]) W2[e] * (h/d)^-1/2 (autoscale).
inline Vec host_expert(const Vec& x, const Vec& w1, const Vec& w2, int e, int64_t d, int64_t h) {
  Vec hid(static_cast<size_t>(h), 0.0), y(static_cast<size_t>(d), 0.0);
  for (int64_t j = 0; j < h; ++j) {
    for (int64_t i = 0; i < d; ++i) hid[j] += x[i] * w1[(e * d + i) * h + j];
    hid[j] = std::max(hid[j], 0.0);
  }
  const double s = 1.0 / std::sqrt(double(h) / double(d));
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < h; ++j) y[i] += hid[j] * w2[(e * h + j) * d + i] * s;
  return y;
}

/// Rows of x W (host): [R, n].
inline Vec host_logits(const Vec& x, const Vec& w, int64_t rows, int64_t d, int64_t n) {
  Vec l(static_cast<size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < n; ++e)
      for (int64_t i = 0; i < d; ++i) l[r * n + e] += x[r * d + i] * w[i * n + e];
  return l;
}

inline Vec softmax_rows(const Vec& l, int64_t rows, int64_t n) {
  Vec p(l.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, z = 0;
    for (int64_t e = 0; e < n; ++e) mx = std::max(mx, l[r * n + e]);
    for (int64_t e = 0; e < n; ++e) z += std::exp(l[r * n + e] - mx);
    for (int64_t e = 0; e < n; ++e) p[r * n + e] = std::exp(l[r * n + e] - mx) / z;
  }
  return p;
}

/// Indices of the k largest of v (ties: lower index first).
inline std::vector<int> top_indices(const Vec& v, int k) {
  std::vector<int> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[a] > v[b]; });
  order.resize(static_cast<size_t>(k));
  return order;
}

struct Layer {
  int64_t rows, d, h;
  int n;
  Tensor x, wg, w1, w2;
};
inline Layer layer(int64_t rows, int64_t d, int64_t h, int n, uint32_t seed) {
  return {rows,
          d,
          h,
          n,
          random_tensor(Shape{rows, d}, seed),
          random_tensor(Shape{d, n}, seed + 1, -2, 2),
          random_tensor(Shape{n, d, h}, seed + 2),
          random_tensor(Shape{n, h, d}, seed + 3)};
}

/// y on the host from (expert, token, weight) assignments.
inline Vec host_combine(const Layer& L, const std::vector<std::tuple<int, int, double>>& assignments) {
  const Vec X = L.x.to_vector<double>(), W1 = L.w1.to_vector<double>(), W2 = L.w2.to_vector<double>();
  Vec y(static_cast<size_t>(L.rows * L.d), 0.0);
  for (const auto& [e, t, w] : assignments) {
    const Vec xt(X.begin() + t * L.d, X.begin() + (t + 1) * L.d);
    const Vec o = host_expert(xt, W1, W2, e, L.d, L.h);
    for (int64_t c = 0; c < L.d; ++c) y[t * L.d + c] += w * o[c];
  }
  return y;
}


/// The layer's routing (expert and weight of each assignment, in order) and output equal `want`'s.
inline void check_routing(const MoeOutput& out, const Layer& L,
                          const std::vector<std::tuple<int, int, double>>& want) {
  const auto ex = out.routing.expert.val().to_vector<int32_t>();
  const Vec wt = out.routing.weight.val().to_vector<double>();
  REQUIRE(ex.size() == want.size());
  for (size_t a = 0; a < ex.size(); ++a) {
    CHECK(ex[a] == std::get<0>(want[a]));
    CHECK(wt[a] == Approx(std::get<2>(want[a])).margin(1e-12));
  }
  const Vec y = out.y.val().to_vector<double>(), ref = host_combine(L, want);
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).margin(1e-12));
}
}  // namespace moe::test
