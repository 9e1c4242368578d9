// Adaptive input and adaptive softmax (lib/models/adaptive.h): log-probabilities that sum to one
// over the vocabulary, the band-wise loss equal to -log p from the full distribution (masks
// respected, tied and untied weights), finite-difference gradients in f64, the adaptive input equal
// to its per-token definition, and option checks.
#include "models/adaptive.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/shape_ops.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
// vocab 10 in bands [0,4) [4,7) [7,10) with dims 8, 4, 2.
AdaptiveSpec spec() { return AdaptiveSpec{10, 8, {4, 7}, 2.0}; }
Tensor i32(const std::vector<int32_t>& v) { return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}); }
}  // namespace

TEST_CASE("adaptive softmax: log-probabilities sum to one", "[models][adaptive]") {
  for (bool tie : {false, true}) {
    INFO("tied " << tie);
    ParameterStore store(Device::cpu(), 3);
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    if (tie) adaptive_input(b.sub("in"), spec(), i32({0, 5, 9}));  // declares the tied tables
    auto w = adaptive_softmax_weights(b.sub("out"), b.sub("in"), spec(), {tie, tie});
    Expr h = g.input(test::random_tensor({5, 8}, 4, -2, 2, DType::f32));
    Expr lp = adaptive_log_probs(w, spec(), h);
    REQUIRE(lp.shape() == Shape{5, 10});
    const auto v = lp.val().to_vector<double>();
    for (int r = 0; r < 5; ++r) {
      double s = 0;
      for (int k = 0; k < 10; ++k) s += std::exp(v[r * 10 + k]);
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
    CHECK((store.find("out.tail1.out") >= 0) == !tie);
  }
}

TEST_CASE("adaptive softmax: loss equals -log p of the targets over the mask", "[models][adaptive]") {
  ParameterStore store(Device::cpu(), 5);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  auto w = adaptive_softmax_weights(b.sub("out"), b.sub("in"), spec(), {});
  Expr h = g.input(test::random_tensor({6, 8}, 6, -1, 1, DType::f32));
  const std::vector<int32_t> t = {1, 5, 9, 3, 8, 6};
  const std::vector<float> m = {1, 1, 1, 0, 1, 1};
  const auto lp = adaptive_log_probs(w, spec(), h).val().to_vector<double>();
  double want = 0;
  for (int r = 0; r < 6; ++r) want -= m[r] * lp[r * 10 + t[r]];
  Expr loss = adaptive_softmax_loss(w, spec(), h, i32(t), Tensor::from_vector(m, Shape{6}));
  CHECK(loss.val().item() == Approx(want).epsilon(1e-5));
  // No mask: every row counts.
  Expr all = adaptive_softmax_loss(w, spec(), h, i32(t), Tensor());
  CHECK(all.val().item() == Approx(want - lp[3 * 10 + 3]).epsilon(1e-5));
  // A band without targets is skipped; all rows masked gives 0.
  Expr head_only = adaptive_softmax_loss(w, spec(), h, i32({0, 1, 2, 3, 0, 1}), Tensor());
  double want_head = 0;
  for (int r = 0; r < 6; ++r) want_head -= lp[r * 10 + std::vector<int>{0, 1, 2, 3, 0, 1}[r]];
  CHECK(head_only.val().item() == Approx(want_head).epsilon(1e-5));
  Expr none = adaptive_softmax_loss(w, spec(), h, i32(t), Tensor::zeros(Shape{6}, DType::f32, Device::cpu()));
  CHECK(none.val().item() == 0.0);
  CHECK_THROWS_WITH(adaptive_softmax_loss(w, spec(), h, i32({1, 5, 10, 3, 8, 6}), Tensor()),
                    Catch::Contains("target 10") && Catch::Contains("vocabulary of 10"));
}

TEST_CASE("adaptive softmax: gradients match finite differences", "[models][adaptive][gradcheck]") {
  // h [5, 8]; head [4 + 2, 8]; tails: proj [4, 8], [2, 8]; out [3, 4], [3, 2].
  std::vector<Tensor> in = {test::random_tensor({5, 8}, 30), test::random_tensor({6, 8}, 31),
                            test::random_tensor({4, 8}, 32), test::random_tensor({2, 8}, 33),
                            test::random_tensor({3, 4}, 34), test::random_tensor({3, 2}, 35)};
  const Tensor targets = i32({2, 6, 8, 4, 9});
  const Tensor mask = Tensor::from_vector(std::vector<float>{1, 1, 0, 1, 1}, Shape{5});
  const double err = test::gradcheck(in, [&](Graph&, const std::vector<Expr>& x) {
    AdaptiveSoftmaxWeights w{x[1], {x[2], x[3]}, {x[4], x[5]}};
    return adaptive_softmax_loss(w, spec(), x[0], targets, mask, 0.1f);
  });
  CHECK(err < 1e-6);
}

TEST_CASE("adaptive input: per-token definition and gradients", "[models][adaptive][gradcheck]") {
  const std::vector<int32_t> ids = {9, 0, 5, 3, 7, 4};
  std::vector<Tensor> in = {test::random_tensor({4, 8}, 40), test::random_tensor({3, 4}, 41),
                            test::random_tensor({3, 2}, 42), test::random_tensor({8, 8}, 43),
                            test::random_tensor({4, 8}, 44), test::random_tensor({2, 8}, 45)};
  auto build = [&](Graph&, const std::vector<Expr>& x) {
    return adaptive_input({x[0], x[1], x[2]}, {x[3], x[4], x[5]}, spec(), Tensor::from_vector(ids, Shape{2, 3}), 1.5f);
  };
  const Tensor out = test::evaluate(in, build);
  REQUIRE(out.shape() == Shape{2, 3, 8});
  const auto got = out.to_vector<double>();
  for (size_t k = 0; k < ids.size(); ++k) {
    const int band = ids[k] < 4 ? 0 : ids[k] < 7 ? 1 : 2;
    const int lo = band == 0 ? 0 : band == 1 ? 4 : 7, dim = 8 >> band;
    const auto e = in[band].to_vector<double>(), p = in[3 + band].to_vector<double>();
    for (int j = 0; j < 8; ++j) {
      double want = 0;
      for (int i = 0; i < dim; ++i) want += 1.5 * e[(ids[k] - lo) * dim + i] * p[i * 8 + j];
      CHECK(got[k * 8 + j] == Approx(want).epsilon(1e-12));
    }
  }
  CHECK(test::gradcheck(in, build) < 1e-6);
}

TEST_CASE("adaptive: option checks", "[models][adaptive]") {
  CHECK_THROWS_WITH((AdaptiveSpec{10, 8, {4, 4}, 2.0}.validate("model.cutoffs")),
                    Catch::Contains("model.cutoffs") && Catch::Contains("increase"));
  CHECK_THROWS_WITH((AdaptiveSpec{10, 8, {4, 12}, 2.0}.validate("x")), Catch::Contains("vocab = 10"));
  CHECK_THROWS_WITH((AdaptiveSpec{10, 4, {2, 4, 6}, 4.0}.validate("x")), Catch::Contains("no features"));
  CHECK(AdaptiveSpec{100, 1024, {20, 60}, 4.0}.band_dim(2) == 64);
  ParameterStore store(Device::cpu(), 1);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  CHECK_THROWS_WITH(adaptive_input(Builder(g), spec(), i32({1, 10})), Catch::Contains("token id 10"));
}
