// The property data weighting's losses share (models/target_loss.h for translation, LmBatch::weights for language
// models): with random weights w >= 0 on the scored targets, loss(w) = sum_i loss(w_i alone), each of those > 0;
// weights equal to the mask give the unweighted loss; and the weighted loss differs from it. And the gradients of a
// batch whose one row weighs 2 and the others 0: twice those of that row alone.
// Used by tests/training/weighted_loss_test.cpp and tests/training/lm_weighted_loss_test.cpp.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tensor/tensor.h"

namespace moe::test {

/// `loss(weights)` is the loss of one batch whose targets are `mask` (1 scored, 0 padding) with those weights, or
/// without weights for an undefined tensor.
inline void check_loss_linear_in_weights(const std::function<double(const Tensor&)>& loss, const Tensor& mask,
                                         unsigned seed) {
  const std::vector<float> m = mask.to_vector<float>();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 3.f);
  std::vector<float> w(m.size(), 0.f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = m[i] != 0 ? u(rng) : 0.f;
  const double plain = loss(Tensor());
  CHECK(loss(Tensor::from_vector(m, mask.shape())) == Approx(plain).epsilon(1e-6));  // weights 1
  const double weighted = loss(Tensor::from_vector(w, mask.shape()));
  double sum = 0;  // each target's weight alone
  for (size_t i = 0; i < w.size(); ++i) {
    if (m[i] == 0) continue;
    std::vector<float> one(w.size(), 0.f);
    one[i] = w[i];
    const double li = loss(Tensor::from_vector(one, mask.shape()));
    CHECK(li > 0);
    sum += li;
  }
  CHECK(weighted == Approx(sum).epsilon(1e-5));
  CHECK(weighted != Approx(plain).epsilon(1e-3));
}

/// `weighted` (the gradients of a batch whose one row weighs 2, the others 0) equals twice `alone` (that row's).
inline void check_twice_the_gradients(const std::vector<float>& weighted, const std::vector<float>& alone) {
  REQUIRE(weighted.size() == alone.size());
  double norm = 0, worst = 0;
  for (size_t i = 0; i < alone.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(weighted[i]) - 2.0 * alone[i]));
    norm += std::abs(alone[i]);
  }
  CHECK(norm > 0);
  CHECK(worst < 1e-5);
}

}  // namespace moe::test
