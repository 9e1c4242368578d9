// Beam search over any incremental scorer (fairseq's SequenceGenerator semantics), batched over
// sentences: N = (active sentences) x (beams) rows. Each step adds the next-token log-probs to the
// hypothesis scores (beam_scores), takes the top 2*beam candidates of every sentence from its
// [beams * V] scores (the topk op, on the scorer's device), finalises </s> candidates ranked among
// the first `beam`, keeps the best `beam` others, and drops a sentence once it holds `beam` finished
// hypotheses or reached its maximum length (the scorer's state is reordered with fewer rows).
// Length normalisation: fairseq score / len^lenpen, or GNMT score / ((5 + len) / 6)^lenpen, where
// len counts the output tokens and </s>. Beam 1 is greedy decoding. Forced target prefixes:
// target_prefix.h. The options a user gives (SearchOptions) are declared in models/decoding_options.h.
// Covered by tests/translator/beam_search_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/decoding_options.h"
#include "tensor/tensor.h"

namespace moe {

/// The normalised score of a hypothesis with summed log-prob `log_prob` and `length` tokens (with </s>).
double normalized_score(double log_prob, int64_t length, LengthPenalty kind, double lenpen);

/// The user's search options and what the model adds.
struct BeamOptions : SearchOptions {
  int64_t max_positions = 1024;  // the decoder's position limit (step t reads position t)
  int32_t pad_id = 0, bos_id = 2, eos_id = 3;
  int32_t unk_id = -1;  // the target vocabulary's <unk> (the caller's to set: -1 = not known, and unkpen must be 0)
  bool operator==(const BeamOptions&) const = default;
};

/// The most output tokens (without </s>) for a source of `src_len` tokens (with its </s>).
int64_t max_output_length(int64_t src_len, const BeamOptions& options);

/// Attention weights [output position][source position] (translator/alignment.h).
using SoftAlignment = std::vector<std::vector<float>>;

struct Hypothesis {
  std::vector<int32_t> tokens;  // without <s> and </s>
  double log_prob = 0;          // sum of the token log-probs, </s> included
  double score = 0;             // log_prob normalised by the length penalty
  SoftAlignment alignment;      // with TranslatorOptions::alignment: tokens.size() + 1 rows over the source and </s>
  /// Each token's log-prob as the search scored it (--unkpen and blocked n-grams applied), then </s>'s:
  /// tokens.size() + 1 values summing to log_prob (word scores, Marian's --word-scores).
  std::vector<float> token_scores;
};

/// One decoding step: previous tokens i32 [N] (on the CPU) -> log-probabilities [N, V] (f32, on
/// the scorer's device). The first call gets <s> for every sentence (N = number of sentences).
using StepFn = std::function<Tensor(const Tensor& prev)>;
/// Reorders the scorer's state: new row i = old row origin[i] (i32 [N'], on the scorer's device).
using ReorderFn = std::function<void(const Tensor& origin)>;

/// Per sentence, the target tokens its output must begin with (without <s>; empty = free;
/// translator/target_prefix.h). An empty list: no prefixes.
using TargetPrefixes = std::vector<std::vector<int32_t>>;

/// Each sentence's maximum output length (max_output_length), raised to its forced prefix's length when longer
/// (`prefixes`: none, or one per sentence; checked by check_prefixes, target_prefix.h).
std::vector<int64_t> max_output_lengths(const std::vector<int64_t>& src_lengths, const BeamOptions& options,
                                        const TargetPrefixes& prefixes);
/// Sorts each list best score first (stable: equal scores keep their order) and keeps its first n_best.
void keep_n_best(std::vector<std::vector<Hypothesis>>& lists, int n_best);

/// Searches all sentences at once; `src_lengths` (with </s>) give each sentence's maximum length.
/// Returns per sentence up to n_best hypotheses, best normalised score first (empty only when the
/// scorer gave -inf to every continuation). `prefixes` (one per sentence, or none) are forced.
std::vector<std::vector<Hypothesis>> beam_search(const std::vector<int64_t>& src_lengths, const StepFn& step,
                                                 const ReorderFn& reorder, const BeamOptions& options,
                                                 const TargetPrefixes& prefixes = {});

}  // namespace moe
