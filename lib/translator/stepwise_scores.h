// Forced decoding through the Decoder interface (models/decoder.h): the log-probability
//   log P(y | x) = sum_t log p(y_t | y_<t, x)   (t over y's tokens and </s>)
// read step by step from Decoder::step fed the reference tokens, so that any decoder scores pairs,
// an ensemble (models/ensemble_decoder.h: moe-score pairs -m A -m B) included. It equals
// score_pairs' teacher-forced pass up to rounding (tests/translator/ensemble_test.cpp).
#pragma once
#include <vector>

#include "models/decoder.h"
#include "translator/pair_scores.h"

namespace moe {

/// Scores pairs in padded batches of options.max_tokens (source or target tokens, the larger);
/// `params` is the store the calling graph runs on (an ensemble's members bring their own).
std::vector<PairScore> score_pairs_stepwise(const Decoder& decoder, ParameterStore& params, Device device,
                                            const std::vector<std::vector<int32_t>>& src,
                                            const std::vector<std::vector<int32_t>>& tgt,
                                            const PairScoreOptions& options);

}  // namespace moe
