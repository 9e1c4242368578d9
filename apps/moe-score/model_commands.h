// The model-based subcommands of moe-score: `ppl` (language-model perplexity, sliding windows),
// `pairs` (forced-decoding log-probabilities of given translations and their corpus perplexity) and
// `experts` (expert usage of the gated sites: translator/expert_analysis.h, expert_report.h).
// Covered by tests/translator/scoring_test.cpp, experts_command_test.cpp and mae_scoring_test.cpp.
#pragma once
#include "cli/subcommand_table.h"

namespace moe {

cli::SubcommandRunner setup_ppl(CLI::App& sub);
cli::SubcommandRunner setup_pairs(CLI::App& sub);
cli::SubcommandRunner setup_experts(CLI::App& sub);

}  // namespace moe
