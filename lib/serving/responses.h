// The JSON bodies moe-serve answers with (docs/SERVING.md): translations and continuations with their scores and
// n-best lists (texts decoded exactly as moe-translate decodes them, translate_text.h), forced-decoding scores
// of pairs and the perplexity of LM text (computed here, on the worker's thread), and the model list.
// Scores are natural-log, length-normalised as moe-translate's n-best lines; JSON has no -inf, so a
// hypothesis the search could not find is absent rather than given a score. Covered by
// tests/serving/worker_test.cpp and tests/scripts/serve.sh.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "serving/request.h"
#include "serving/worker.h"
#include "translator/translate_text.h"

namespace moe::serving {

/// The source ids of a request's lines (encoded and cut to the model's positions as moe-translate does);
/// `truncated` counts the lines that were cut.
std::vector<std::vector<int32_t>> encode_request(const ServedModel& model, const TranslateRequest& request,
                                                 int64_t& truncated);

/// The target prefixes of a request's lines (none without "prefix"), encoded with the target vocabulary as
/// moe-translate --prefix encodes them and checked as beam search checks them: a prefix it would refuse
/// (too long for the model, a special token) is a RequestError naming "prefix[i]", found before queueing
/// so that it cannot fail the other requests of its batch.
TargetPrefixes encode_prefixes(const ServedModel& model, const TranslateRequest& request);

/// {"model", "translations": [{"text", "score", "hypotheses" (n_best > 1): [{"text", "score"}]}], "truncated"};
/// with fields.alignment, each text with its "alignment": hard or threshold, the links as [source, output]
/// positions; soft, per output position its weights over the source positions (subword tokens, each side's </s>
/// last); with alignment->words, links between the words of `sources` (the lines' source ids) and of the outputs.
/// With fields.word_scores, each text with its "word_scores" (Hypothesis::token_scores, 6 decimals).
std::string translate_body(const ServedModel& model, int n_best, const std::vector<std::vector<Hypothesis>>& hyps,
                           int64_t truncated, const OutputFields& fields = {},
                           const std::vector<std::vector<int32_t>>& sources = {});

/// The prompts of a generate request, encoded with the language model's vocabulary as moe-generate encodes them;
/// one longer than the model's positions allow is a RequestError naming "text[i]" (found before queueing).
std::vector<std::vector<int32_t>> encode_prompts(const ServedModel& model, const GenerateRequest& request);

/// {"model", "generations": [{"text", "score", "hypotheses" (n_best > 1): [{"text", "score"}]}]}: the continuations
/// (without their prompts), scores counting the prompts' tokens as moe-generate's n-best lines do; with
/// `word_scores`, each text with its "word_scores" (the new tokens', then </s>'s).
std::string generate_body(const ServedModel& model, int n_best, const std::vector<std::vector<Hypothesis>>& hyps,
                          bool word_scores = false);

/// Scores `request` with `model` on `device` (pairs or LM text, as the model is) and returns the body:
/// pairs: {"model", "scores": [{"log_prob", "tokens", "alignment" and "word_scores" (when asked, as in
/// translate_body)}], "log_prob",
/// "tokens", "perplexity"};
/// text: {"model", "tokens", "nll", "perplexity"}. Errors name the field (RequestError). Pairs with `lm` (the request's
/// fused language model, fused_lm): scored step by step, log p_tm + lm_weight x log p_lm per token.
std::string score_body(ServedModel& model, const ScoreRequest& request, Device device, DType dtype,
                       const ServedModel* lm = nullptr);

/// Checks a score request against the model before it is queued (kind of model, lengths).
void check_score_request(const ServedModel& model, const ScoreRequest& request);

/// {"models": [{"name", "path", "type", "kind", "device"}]}.
std::string models_body(const std::vector<ServedModel>& models, Device device);

}  // namespace moe::serving
