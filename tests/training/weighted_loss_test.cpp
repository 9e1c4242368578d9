// Data weighting's loss (models/target_loss.h through Model::loss): for every translation family, the loss of a
// batch with target weights w is sum_{b,t} w[b,t] CE(b,t) (linear in w: the sum of the losses with each token's
// weight alone), weights of 1 give the unweighted loss, and a pair of weight 0 takes no part in the gradient (the
// Transformer's gradients equal twice those of the other pair alone when it weighs 2).
#include "support/weighted_loss.h"

#include <algorithm>
#include <catch2/catch.hpp>

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
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 3);
      test::check_loss_linear_in_weights(
          [&](const Tensor& w) {
            batch.tgt_weights = w;
            return loss_of(m, batch);
          },
          batch.tgt_mask, 7);
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
  test::check_twice_the_gradients(grads(both), grads(batch_of({0})));
}
