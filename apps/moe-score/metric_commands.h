// The `bleu` and `chrf` subcommands of moe-score (metric_commands.cpp): sacreBLEU-compatible corpus
// scores of a hypothesis file against references. Covered by tests/metrics/score_cli_test.cpp.
#pragma once
#include "cli/subcommand_table.h"

namespace moe::metrics {

cli::SubcommandRunner setup_bleu(CLI::App& sub);
cli::SubcommandRunner setup_chrf(CLI::App& sub);

}  // namespace moe::metrics
