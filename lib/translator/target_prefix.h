// Forced target prefixes for beam search (moe-translate --prefix): sentence s must begin with the
// tokens prefix[s]. While step t < |prefix[s]|, the sentence's candidates are replaced by the one
// forced continuation of its single live row (row 0 of its beams: every earlier step kept only
// that row, the others are -inf fillers), scored as beam search scores every candidate,
//   score = hypothesis score + log p(prefix[s][t] | y_<t, x),
// so its log-prob counts in the hypothesis score; from step |prefix[s]| on the search is free, and
// every hypothesis (all n-best) starts with the prefix. An empty prefix changes nothing.
// Covered by tests/translator/target_prefix_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "translator/beam_search.h"

namespace moe {

/// Whether step t of sentence s takes its prefix's token (t < |prefixes[s]|; never without prefixes).
inline bool forced_at(const TargetPrefixes& prefixes, int64_t s, int64_t t) {
  return !prefixes.empty() && t < static_cast<int64_t>(prefixes[s].size());
}

/// Checks prefixes against `sentences` and the search's specials (no <pad>, <s> or </s>, no negative
/// id, at most max_positions - 1 tokens) and raises each sentence's maximum output length `max_len[s]`
/// to at least its prefix length. An empty list means none.
void check_prefixes(const TargetPrefixes& prefixes, int64_t sentences, const BeamOptions& o,
                    std::vector<int64_t>& max_len);

/// At step t, for each active sentence a (sentence ids `sentence_of[a]`) still inside its prefix,
/// overwrites its k candidates (cand_score / cand_index, [active, k], index = beam row * v + token)
/// with the forced token of its row 0, scored cum[row] + logp[row, token] as ops/beam_scores.h scores it
/// (logp [active * beams, v] on any device, cum [active * beams] the hypothesis scores; no mask applies: a
/// forced token is no special, and check_prefixes keeps the maximum length past the prefix), and -inf for
/// the rest. A forced id >= v is an error.
void force_prefix_candidates(const TargetPrefixes& prefixes, int64_t t, const std::vector<int64_t>& sentence_of,
                             int64_t beams, const Tensor& logp, const std::vector<float>& cum, int64_t k,
                             std::vector<float>& cand_score, std::vector<int32_t>& cand_index);

}  // namespace moe
