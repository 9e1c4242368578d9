// moe-score: the table of its subcommands (one line each) and the program over it. Covered by
// tests/metrics/score_cli_test.cpp and tests/translator/scoring_test.cpp.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/subcommand_table.h"

namespace moe {

/// bleu, chrf, ppl, pairs, experts.
cli::SubcommandTable score_table();
/// One entry of the table by name (an error for an unknown name).
const cli::Subcommand& score_table_entry(const std::string& name);
/// The program: parses `argv` (argv[0] the program), runs the subcommand, returns its status.
int score_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace moe
