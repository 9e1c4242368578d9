// The model-based subcommands of moe-score: `ppl` (language-model perplexity, sliding windows),
// `pairs` (forced-decoding log-probabilities of given translations and their corpus perplexity) and
// `experts` (expert usage of the gated sites: translator/expert_analysis.h, expert_report.h).
// Registered into the metrics SubcommandTable by apps/moe_score.cpp.
// Covered by tests/translator/scoring_test.cpp, experts_command_test.cpp and mae_scoring_test.cpp.
#pragma once
#include "metrics/score_cli.h"

namespace moe {

/// Adds `ppl`, `pairs` and `experts` to `table`.
void register_model_subcommands(metrics::SubcommandTable& table);

}  // namespace moe
