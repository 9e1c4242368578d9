// Data weighting's loss for language models (Model::lm_loss with LmBatch::weights, data/lm_token_weights.h): for
// the Transformer and LSTM LMs, with a full and with an adaptive softmax, the loss of a batch with weights w is
// sum_{b,t} w[b,t] CE(b,t) (linear in w: the sum of the losses with each target's weight alone), weights of 1 give
// the unweighted loss, and a row of weight 0 takes no part in the gradient (the gradients equal twice those of
// the other row alone when it weighs 2).
#include <algorithm>
#include <catch2/catch.hpp>

#include "support/weighted_loss.h"
#include "translator/tiny_model.h"

using namespace moe;

namespace {

const std::vector<std::pair<const char*, const char*>> kLms = {
    {"transformer_lm",
     "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, max_positions: 24}"},
    {"transformer_lm, adaptive softmax",
     "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, max_positions: 24, "
     "tie_embeddings: false, adaptive_softmax_cutoffs: [8, 16]}"},
    {"lstm_lm", "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 1, dropout: 0.0}"},
    {"lstm_lm, adaptive softmax",
     "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 1, dropout: 0.0, adaptive_softmax_cutoffs: [8, 16]}"},
};

/// Two rows over the 24 words (targets in every band of the adaptive softmax); the second has one padded target.
data::LmBatch batch() {
  return data::make_lm_batch({{3, 4, 9, 17, 21}, {3, 12, 20, 5}}, {{4, 9, 17, 21, 3}, {12, 20, 5, 3}},
                             {{1, 1, 1, 1, 1}, {1, 1, 1, 1}}, {0, 1}, 0);
}

double loss_of(const test::TinyModel& m, const data::LmBatch& b) {
  Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
  return m.model->lm_loss(Builder(g), b, 0.1f).val().item();
}

}  // namespace

TEST_CASE("LM weighted loss: the sum of each target's weighted cross-entropy", "[training][weights][lm]") {
  data::LmBatch b = batch();
  for (const auto& [name, cfg] : kLms) {
    SECTION(name) {
      const test::TinyModel m = test::lm_of(cfg, 5);
      test::check_loss_linear_in_weights(
          [&](const Tensor& w) {
            b.weights = w;
            return loss_of(m, b);
          },
          b.mask, 3);
    }
  }
}

TEST_CASE("LM weighted loss: a row of weight 0 takes no part in the gradient", "[training][weights][lm]") {
  for (const auto& [name, cfg] : kLms) {
    SECTION(name) {
      const test::TinyModel m = test::lm_of(cfg, 7);
      auto grads = [&](const data::LmBatch& b) {
        m.params->zero_grads();
        Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = true});
        g.backward(m.model->lm_loss(Builder(g), b, 0.1f));
        return m.params->grads().to_vector<float>();
      };
      data::LmBatch both = batch();
      const int64_t T = both.mask.shape()[1];
      std::vector<float> w(static_cast<size_t>(2 * T), 0.f);
      std::fill(w.begin(), w.begin() + T, 2.f);  // row 0: 2, row 1: 0
      both.weights = Tensor::from_vector(w, Shape{2, T});
      const data::LmBatch first =
          data::make_lm_batch({{3, 4, 9, 17, 21}}, {{4, 9, 17, 21, 3}}, {{1, 1, 1, 1, 1}}, {0}, 0);
      test::check_twice_the_gradients(grads(both), grads(first));
    }
  }
}
