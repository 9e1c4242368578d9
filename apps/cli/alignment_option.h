// The --alignment option, one definition for moe-translate and moe-score pairs: hard, soft or a threshold in
// [0, 1] (translator/alignment.h, Marian's values), parsed once here; a bad value is a CLI error naming the option.
// --alignment-words turns its links into links between words.
// Covered by tests/translator/translate_cli_test.cpp and tests/translator/scoring_test.cpp.
#pragma once
#include <optional>
#include <string>

#include "translator/alignment.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace moe::cli {

/// Adds --alignment MODE to `app`, parsed into `alignment`, and --alignment-words (AlignmentOutput::words); `what`
/// begins --alignment's description (what gets aligned and where it is written), the values' meanings follow.
/// Returns --alignment.
CLI::Option* add_alignment_option(CLI::App& app, std::optional<AlignmentOutput>& alignment, const std::string& what);

}  // namespace moe::cli
