// The `aer` subcommand of moe-score: the alignment error rate of word alignments against gold links
// (metrics/aer.h), with precision and recall. Covered by tests/metrics/aer_test.cpp.
#pragma once
#include "cli/subcommand_table.h"

namespace moe::metrics {

cli::SubcommandRunner setup_aer(CLI::App& sub);

}  // namespace moe::metrics
