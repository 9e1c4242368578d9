// Perplexity of a language model on running text with the sliding-window protocol of Baevski &
// Auli (fairseq eval_lm --context-window): the text is one token stream (each line's tokens, then
// </s>), cut into windows of `context` tokens whose first scores all of its targets and each later
// one only its last `stride` targets (lib/data/lm_stream.h eval_batches), so every token is scored
// exactly once with at least context - stride tokens of history. Summed negative log-likelihoods
// come from Model::lm_loss (models/lm_eval.h, shared with moe-train's LM validation);
// PPL = exp(nll / tokens). Covered by tests/translator/scoring_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "graph/parameters.h"
#include "models/model.h"

namespace moe {

struct PerplexityOptions {
  int64_t context = 512;
  int64_t stride = 0;      // scored targets per later window; 0 = context / 2 (at least 1)
  int64_t batch_size = 8;  // windows per forward pass
  DType dtype = DType::f32;
  std::function<void(int64_t scored_tokens)> progress;  // optional: after each batch of windows
};

struct PerplexityResult {
  int64_t tokens = 0;            // scored tokens (every stream token, </s> of each line included)
  int64_t lines = 0, words = 0;  // input lines and their whitespace-separated words
  double nll = 0;                // summed negative log-likelihood (natural log)
  double ppl() const;            // exp(nll / tokens)
  double word_ppl() const;       // exp(nll / (words + lines)): per word, with one </s> per line
};

/// Encodes `lines` into one stream: each line's ids followed by eos_id.
std::vector<int32_t> lm_stream_of(const std::vector<std::string>& lines, const data::Vocab& vocab);

/// Scores `stream` with `model` (a language model) on `device`; `params` must be on `device`.
PerplexityResult lm_perplexity(const Model& model, ParameterStore& params, Device device,
                               const std::vector<int32_t>& stream, const PerplexityOptions& options, int32_t eos_id = 3,
                               int32_t pad_id = 0);

}  // namespace moe
