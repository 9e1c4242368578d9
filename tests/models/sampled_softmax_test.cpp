// The importance-sampled softmax (models/sampled_softmax.h) on a small vocabulary: the draws follow
// the log-uniform proposal; exp(loss) is an unbiased estimate of exp(full softmax loss) (the mean
// over many sample sets within 4 standard errors), the loss itself lies below the full loss and
// approaches it as k grows; a sample equal to the target leaves the estimate; finite-difference
// gradients; and an lstm_lm with model.sampled_softmax trains on [N, 1 + k] scores while validation
// (an inference graph) is its full softmax.
#include "models/sampled_softmax.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/cross_entropy.h"
#include "graph/expr/matmul.h"
#include "models/lstm_lm.h"
#include "models/model_registry.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
constexpr int64_t kVocab = 30, kRows = 4, kDim = 6;

/// Per-row losses of `rows` against `weight` for `samples` (empty: the full softmax), in f64.
std::vector<double> losses(const Tensor& rows, const Tensor& weight, const Tensor& targets,
                           const std::vector<int32_t>& samples) {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  moe::Builder b(g);
  const Expr r = g.input(rows), w = g.input(weight);
  const Expr out = samples.empty() ? cross_entropy(matmul(r, w, false, true), g.input(targets), 0.f, -1)
                                   : sampled_softmax_loss(b, r, w, targets, samples);
  return out.val().to_vector<double>();
}
}  // namespace

TEST_CASE("sampled softmax: the draws follow the log-uniform proposal", "[models][sampled_softmax]") {
  double total = 0;
  for (int64_t w = 0; w < kVocab; ++w) total += log_uniform_probability(w, kVocab);
  CHECK(total == Approx(1.0));
  const int64_t n = 200000;
  const std::vector<int32_t> s = draw_log_uniform(kVocab, n, 7, 3);
  std::vector<double> freq(kVocab, 0);
  for (int32_t w : s) freq[static_cast<size_t>(w)] += 1.0 / n;
  for (int64_t w = 0; w < kVocab; ++w) {
    const double q = log_uniform_probability(w, kVocab);
    CHECK(std::abs(freq[static_cast<size_t>(w)] - q) < 5 * std::sqrt(q * (1 - q) / n));
  }
  CHECK(draw_log_uniform(kVocab, 8, 7, 3) == std::vector<int32_t>(s.begin(), s.begin() + 8));  // keyed, repeatable
}

TEST_CASE("sampled softmax: exp(loss) is an unbiased estimate of exp(full loss)", "[models][sampled_softmax]") {
  const Tensor rows = test::random_tensor(Shape{kRows, kDim}, 1, -1.5, 1.5);
  const Tensor weight = test::random_tensor(Shape{kVocab, kDim}, 2, -1.5, 1.5);
  const Tensor targets = Tensor::from_vector(std::vector<int32_t>{0, 3, 11, 29}, Shape{kRows});
  const std::vector<double> full = losses(rows, weight, targets, {});
  auto moments = [&](int64_t k, int draws, std::vector<double>* mean_exp, std::vector<double>* se_exp,
                     std::vector<double>* mean_loss) {
    std::vector<double> s1(kRows, 0), s2(kRows, 0), l1(kRows, 0);
    for (int d = 0; d < draws; ++d) {
      const std::vector<double> l =
          losses(rows, weight, targets, draw_log_uniform(kVocab, k, 11, static_cast<uint64_t>(d)));
      for (int64_t i = 0; i < kRows; ++i) {
        const double e = std::exp(l[static_cast<size_t>(i)]);
        s1[static_cast<size_t>(i)] += e;
        s2[static_cast<size_t>(i)] += e * e;
        l1[static_cast<size_t>(i)] += l[static_cast<size_t>(i)];
      }
    }
    for (int64_t i = 0; i < kRows; ++i) {
      const double m = s1[static_cast<size_t>(i)] / draws;
      (*mean_exp)[static_cast<size_t>(i)] = m;
      (*se_exp)[static_cast<size_t>(i)] = std::sqrt((s2[static_cast<size_t>(i)] / draws - m * m) / draws);
      (*mean_loss)[static_cast<size_t>(i)] = l1[static_cast<size_t>(i)] / draws;
    }
  };
  std::vector<double> m(kRows), se(kRows), few(kRows), many_m(kRows), many_se(kRows), many(kRows);
  moments(5, 4000, &m, &se, &few);
  moments(100, 400, &many_m, &many_se, &many);
  for (int64_t i = 0; i < kRows; ++i) {
    const auto u = static_cast<size_t>(i);
    INFO("row " << i << ": full loss " << full[u] << ", mean exp(loss) " << m[u] << " +- " << se[u]);
    CHECK(std::abs(m[u] - std::exp(full[u])) < 4 * se[u]);
    CHECK(std::abs(many_m[u] - std::exp(full[u])) < 4 * many_se[u]);
    CHECK(few[u] < full[u]);  // Jensen: the log of an unbiased estimate lies below on average
    CHECK(std::abs(many[u] - full[u]) < std::abs(few[u] - full[u]));
  }
}

TEST_CASE("sampled softmax: accidental hits and gradients", "[models][sampled_softmax]") {
  const Tensor rows = test::random_tensor(Shape{kRows, kDim}, 3);
  const Tensor weight = test::random_tensor(Shape{kVocab, kDim}, 4);
  const Tensor targets = Tensor::from_vector(std::vector<int32_t>{2, 2, 5, 7}, Shape{kRows});
  // Every sample is row 0's and row 1's target: their estimate is exp(z_t) alone, a loss of 0.
  const std::vector<double> hit = losses(rows, weight, targets, {2, 2, 2});
  CHECK(hit[0] == Approx(0).margin(1e-12));
  CHECK(hit[1] == Approx(0).margin(1e-12));
  CHECK(hit[2] > 0);
  const std::vector<int32_t> samples = {1, 5, 9, 9, 20};
  const double err = test::gradcheck({rows, weight}, [&](Graph& g, const std::vector<Expr>& x) {
    return sampled_softmax_loss(moe::Builder(g), x[0], x[1], targets, samples);
  });
  CHECK(err < 1e-6);
}

TEST_CASE("sampled softmax: an lstm_lm trains on sampled scores and validates on the full softmax",
          "[models][sampled_softmax]") {
  YAML::Node m = YAML::Load("{type: lstm_lm, vocab: 50, embed_dim: 8, hidden: 8, layers: 1, sampled_softmax: 7}");
  const auto sampled = create_model(m);
  m["sampled_softmax"] = 0;
  const auto full = create_model(m);
  const data::LmBatch batch =
      data::make_lm_batch({{4, 5, 6}, {7, 8, 9}}, {{5, 6, 7}, {8, 9, 10}}, {{1, 1, 1}, {1, 1, 0}}, {0, 1}, 0);
  ParameterStore store(Device::cpu(), 1);
  {
    Graph g(Device::cpu(), &store, GraphOptions{.training = true});
    const Expr loss = sampled->lm_loss(moe::Builder(g), batch, 0.f);
    bool full_scores = false, sampled_scores = false;
    for (const auto& n : g.tape()) {
      full_scores = full_scores || (n->shape.ndim() == 2 && n->shape[1] == 50);
      sampled_scores = sampled_scores || (n->shape.ndim() == 2 && n->shape[0] == 6 && n->shape[1] == 8);
    }
    CHECK_FALSE(full_scores);
    CHECK(sampled_scores);
    g.forward();
    CHECK(std::isfinite(loss.val().item()));
    CHECK_THROWS_WITH(sampled->lm_loss(moe::Builder(g), batch, 0.1f), Catch::Contains("label_smoothing"));
  }
  Graph a(Device::cpu(), &store, GraphOptions{.training = false}),
      b(Device::cpu(), &store, GraphOptions{.training = false});
  CHECK(sampled->lm_loss(moe::Builder(a), batch, 0.f).val().item() ==
        full->lm_loss(moe::Builder(b), batch, 0.f).val().item());
  CHECK_THROWS_WITH(
      create_model(YAML::Load("{type: lstm_lm, vocab: 50, sampled_softmax: 7, adaptive_softmax_cutoffs: [20]}")),
      Catch::Contains("model.sampled_softmax"));
}
