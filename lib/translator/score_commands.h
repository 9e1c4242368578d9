// The model-based subcommands of moe-score: `ppl` (language-model perplexity, sliding windows) and
// `pairs` (forced-decoding log-probabilities of given translations and their corpus perplexity).
// Registered into the metrics SubcommandTable by apps/moe_score.cpp.
// Covered by tests/translator/scoring_test.cpp.
#pragma once
#include "metrics/score_cli.h"

namespace moe {

/// Adds `ppl` and `pairs` to `table`.
void register_model_subcommands(metrics::SubcommandTable& table);

}  // namespace moe
