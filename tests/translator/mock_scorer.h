// A hand-built incremental scorer for beam-search and sampling tests: log-probabilities are a function of
// (sentence, prefix), the state is the prefix of every row, and reorder() permutes the rows the way
// Transformer::reorder permutes its caches. It records the row count of every step. hashed(): a deterministic
// pseudo-random distribution to build scorers from. search_three(): a scorer's search over three inputs.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "translator/beam_search.h"
#include "translator/sampling_search.h"

namespace moe::test {

/// A deterministic pseudo-random normalised distribution (log-probabilities) over v tokens for (sentence, prefix).
inline std::vector<double> hashed(int64_t sentence, const std::vector<int32_t>& prefix, int64_t v) {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(sentence);
  for (int32_t t : prefix) h = (h ^ static_cast<uint64_t>(t + 7)) * 1099511628211ull;
  std::vector<double> lp(static_cast<size_t>(v));
  double z = 0;
  for (int64_t t = 0; t < v; ++t) {
    uint64_t x = (h + static_cast<uint64_t>(t) * 0x9e3779b97f4a7c15ull);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    lp[t] = static_cast<double>(x % 10000) / 2000.0;
    z += std::exp(lp[t]);
  }
  for (double& x : lp) x -= std::log(z);
  return lp;
}

class MockScorer {
 public:
  /// lp(sentence, prefix) -> log-probs over the vocabulary (size V).
  using Dist = std::function<std::vector<double>(int64_t sentence, const std::vector<int32_t>& prefix)>;
  MockScorer(int64_t vocab, Dist dist) : V_(vocab), dist_(std::move(dist)) {}

  StepFn step_fn() {
    return [this](const Tensor& prev) {
      const auto p = prev.to_vector<int32_t>();
      if (!started_) {
        for (size_t s = 0; s < p.size(); ++s) {
          sentence_.push_back(static_cast<int64_t>(s));
          prefix_.emplace_back();
        }
        started_ = true;
      } else {
        for (size_t r = 0; r < p.size(); ++r) prefix_[r].push_back(p[r]);
      }
      rows_per_step.push_back(static_cast<int64_t>(p.size()));
      std::vector<float> lp(p.size() * static_cast<size_t>(V_));
      for (size_t r = 0; r < p.size(); ++r) {
        const auto d = dist_(sentence_[r], prefix_[r]);
        for (int64_t t = 0; t < V_; ++t) lp[r * V_ + t] = static_cast<float>(d[t]);
      }
      return Tensor::from_vector(lp, Shape{static_cast<int64_t>(p.size()), V_});
    };
  }
  ReorderFn reorder_fn() {
    return [this](const Tensor& origin) {
      std::vector<int64_t> s;
      std::vector<std::vector<int32_t>> p;
      for (int32_t i : origin.to_vector<int32_t>()) {
        s.push_back(sentence_.at(static_cast<size_t>(i)));
        p.push_back(prefix_.at(static_cast<size_t>(i)));
      }
      sentence_ = s;
      prefix_ = p;
    };
  }
  std::vector<int64_t> rows_per_step;

 private:
  int64_t V_;
  Dist dist_;
  bool started_ = false;
  std::vector<int64_t> sentence_;
  std::vector<std::vector<int32_t>> prefix_;
};

/// run_search (beam search, or sampling with o.sampling) of `m` over three inputs of 2, 4 and 2 tokens (with </s>).
inline std::vector<std::vector<Hypothesis>> search_three(MockScorer m, const BeamOptions& o,
                                                         const TargetPrefixes& prefixes = {}) {
  const std::vector<std::vector<int32_t>> inputs = {{4, 3}, {5, 6, 7, 3}, {8, 3}};
  std::vector<const std::vector<int32_t>*> ptrs;
  for (const auto& x : inputs) ptrs.push_back(&x);
  return run_search({2, 4, 2}, ptrs, m.step_fn(), m.reorder_fn(), o, prefixes);
}

}  // namespace moe::test
