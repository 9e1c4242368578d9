// Text continuation by a causal language model (moe-generate): each prompt (token ids, possibly none) is a forced
// target prefix (target_prefix.h) of the model's decoding from <s> (which the model reads as </s>, the context of
// every sentence in its training: models/decoder.h lm_step_tokens), and beam search (beam_search.h) or sampling
// (sampling_search.h, each prompt's draws keyed by its tokens) continues it until </s> or a * |prompt| + b more
// tokens (max_len_a, max_len_b; capped by the model's positions; min_len counts the prompt's tokens). The
// hypotheses hold the continuation only, and their token_scores the new tokens' (then </s>'s); their log_prob and
// score count the prompt's tokens too (the whole sequence's log-probability, as fairseq scores a prefix). Prompts are
// batched longest first, at most max_tokens / beam tokens of prompt per batch, and the results come back in input
// order. Covered by tests/translator/lm_generation_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "translator/translator.h"

namespace moe {

/// Up to n_best continuations per prompt, best score first. A prompt longer than the model's positions allow
/// (max_positions - 1 tokens) is an error. `on_batch(prompts, tokens)` runs after each batch (progress).
std::vector<std::vector<Hypothesis>> generate_continuations(
    const Decoder& lm, ParameterStore& params, Device device, const TranslatorOptions& options,
    const std::vector<std::vector<int32_t>>& prompts,
    const std::function<void(int64_t prompts, int64_t tokens)>& on_batch = {});

}  // namespace moe
