// One draw of sampling search (translator/sampling_search.h): a token from a row of log-probabilities, as
// fairseq's sampling draws it. Over the tokens whose log-probability is finite (the caller sets what may not be
// chosen to -inf), the weights are w_i = exp((logp_i - max) / T) (the model's distribution at temperature T; f32,
// cpu_math.h's exp_fast); top-k keeps the k of largest weight, top-p then the smallest set of largest weight whose
// mass reaches p times theirs (both in decreasing weight, ties by lower id); the token is the first whose
// cumulative weight, over the kept tokens in id order, exceeds u times the kept total, for u uniform in [0, 1).
// Covered by tests/translator/sampling_search_test.cpp.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace moe {

struct SamplingRule {
  double temperature = 1.0;
  int64_t topk = 0;   // 0: all tokens
  double topp = 1.0;  // 1: all tokens
};

/// What a draw works in, kept between draws.
struct SamplerScratch {
  std::vector<float> weight;
  std::vector<double> histogram;
  std::vector<std::pair<float, int32_t>> work;
};

/// The drawn token of `logp` [v] for the uniform number u, or -1 when every entry is -inf.
int32_t sample_token(const float* logp, int64_t v, const SamplingRule& rule, double u, SamplerScratch& scratch);

}  // namespace moe
