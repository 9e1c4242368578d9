// moe-vocab: the table of its subcommands (vocab_commands.cpp: build, encode, lex, bench).
// Covered by tests/data/prep_test.cpp.
#pragma once
#include "cli/subcommand_table.h"

namespace moe {

cli::SubcommandTable vocab_table();

}  // namespace moe
