// Data weighting's loss (models/target_loss.h through Model::loss): for every translation family, the loss of a
// batch with target weights w is sum_{b,t} w[b,t] CE(b,t) (linear in w: the sum of the losses with each token's
// weight alone), weights of 1 give the unweighted loss, and a pair of weight 0 takes no part in the gradient (the
// Transformer's gradients equal twice those of the other pair alone when it weighs 2).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "translator/pair_scores.h"
#include "translator/tiny_model.h"

using namespace moe;

namespace {

const std::vector<std::vector<int32_t>> kSrc = {{4, 9, 13, 5}, {7, 8}}, kTgt = {{8, 6, 11}, {15, 16, 17, 18}};

data::Batch batch_of(const std::vector<size_t>& pairs) { return pair_batch(kSrc, kTgt, pairs, 0, 2, 3); }

double loss_of(const test::TinyModel& m, const data::Batch& batch) {
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  return m.model->loss(Builder(g), batch, 0.1f).val().item();
}

}  // namespace

TEST_CASE("weighted loss: the sum of each target token's weighted cross-entropy", "[training][weights]") {
  data::Batch batch = batch_of({1, 0});  // T = 5: the second row has one padding position
  const int64_t n = batch.tgt_out.numel();
  const std::vector<float> mask = batch.tgt_mask.to_vector<float>();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 3.f);
  std::vector<float> w(static_cast<size_t>(n), 0.f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = mask[i] != 0 ? u(rng) : 0.f;
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 3);
      const double plain = loss_of(m, batch);
      batch.tgt_weights = Tensor::from_vector(std::vector<float>(mask.begin(), mask.end()), batch.tgt_mask.shape());
      CHECK(loss_of(m, batch) == Approx(plain).epsilon(1e-6));  // weights 1
      batch.tgt_weights = Tensor::from_vector(w, batch.tgt_mask.shape());
      const double weighted = loss_of(m, batch);
      double sum = 0;  // each token's weight alone
      for (size_t i = 0; i < w.size(); ++i) {
        if (mask[i] == 0) continue;
        std::vector<float> one(w.size(), 0.f);
        one[i] = w[i];
        batch.tgt_weights = Tensor::from_vector(one, batch.tgt_mask.shape());
        const double li = loss_of(m, batch);
        CHECK(li > 0);
        sum += li;
      }
      CHECK(weighted == Approx(sum).epsilon(1e-5));
      CHECK(weighted != Approx(plain).epsilon(1e-3));
      batch.tgt_weights = Tensor();
    }
  }
}

TEST_CASE("weighted loss: a pair of weight 0 takes no part in the gradient", "[training][weights]") {
  const test::TinyModel m = test::model_of(test::family_configs().front().second, 5);
  auto grads = [&](const data::Batch& batch) {
    m.params->zero_grads();
    Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = true});
    g.backward(m.model->loss(Builder(g), batch, 0.1f));
    return m.params->grads().to_vector<float>();
  };
  data::Batch both = batch_of({0, 1});
  const int64_t T = both.tgt_out.shape()[1];
  std::vector<float> w(static_cast<size_t>(2 * T), 0.f);
  std::fill(w.begin(), w.begin() + static_cast<int64_t>(kTgt[0].size()) + 1, 2.f);  // pair 0: 2, pair 1: 0
  both.tgt_weights = Tensor::from_vector(w, Shape{2, T});
  const std::vector<float> weighted = grads(both), alone = grads(batch_of({0}));
  REQUIRE(weighted.size() == alone.size());
  double norm = 0, worst = 0;
  for (size_t i = 0; i < alone.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(weighted[i]) - 2.0 * alone[i]));
    norm += std::abs(alone[i]);
  }
  CHECK(norm > 0);
  CHECK(worst < 1e-5);
}
