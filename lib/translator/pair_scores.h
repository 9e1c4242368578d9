// Forced decoding: the log-probability log P(y | x) = sum_t log p(y_t | y_<t, x) of given
// translations y (with </s>) under a translation model, per pair, and the corpus perplexity
// exp(-sum log P / target tokens). Encoder-decoders (Model::seq2seq) are scored in padded batches,
// reading the per-token cross-entropy of every row (each pair's word scores) and summing it per line; other
// models through Model::loss on batches of one pair (a sum only). The expert choice (--mae-inference) makes the scored
// model the one the translator runs with the same choice. Covered by tests/translator/scoring_test.cpp,
// mae_scoring_test.cpp and translator_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/parameters.h"
#include "models/model.h"

namespace moe {

struct PairScore {
  double log_prob = 0;  // natural log, </s> included
  int64_t tokens = 0;   // target tokens scored (with </s>)
  /// log p(y_t | y_<t, x) of each target token, </s>'s last (word scores); empty on the per-pair Model::loss path.
  std::vector<float> token_scores;
};

struct PairScoreOptions {
  int64_t max_tokens = 4096;  // padded (source + target) tokens per batch
  DType dtype = DType::f32;
  bool per_pair = false;  // force the one-pair-per-batch Model::loss path
  /// MAE sites of the scoring graphs (--mae-inference; apps/cli/mae_inference_option.h).
  ExpertChoice experts = ExpertChoice::mixture;
  std::function<void()> after_batch;  // optional: called after each batch (moe-score's stop point)
};

/// Scores pairs of token sequences (without specials); sources longer than the model's positions
/// must be truncated by the caller. Special ids come from `model.config_yaml()` (pad/bos/eos).
std::vector<PairScore> score_pairs(const Model& model, ParameterStore& params, Device device,
                                   const std::vector<std::vector<int32_t>>& src,
                                   const std::vector<std::vector<int32_t>>& tgt, const PairScoreOptions& options);

/// Each pair's batching cost, the longer side with </s>; every side must fit `spec.max_positions`
/// (an error naming the line otherwise). Also the pairs' counts must agree.
std::vector<int64_t> pair_costs(const std::vector<std::vector<int32_t>>& src,
                                const std::vector<std::vector<int32_t>>& tgt, const DecoderSpec& spec);

/// The padded CPU batch of pairs src[i], tgt[i] for i in `idx` (ids = i; specials added as data::make_batch does).
data::Batch pair_batch(const std::vector<std::vector<int32_t>>& src, const std::vector<std::vector<int32_t>>& tgt,
                       const std::vector<size_t>& idx, int32_t pad_id, int32_t bos_id, int32_t eos_id);

/// The special ids and position limit of a translation model: its decoder's, or (a model without one,
/// scored a pair at a time) its stored architecture's (pad 0, <s> 2, </s> 3, no limit when absent).
DecoderSpec translation_spec(const Model& model);

/// exp(-sum log_prob / sum tokens).
double corpus_perplexity(const std::vector<PairScore>& scores);

}  // namespace moe
