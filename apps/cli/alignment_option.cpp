// alignment_option.h implementation. Covered by tests/translator/translate_cli_test.cpp.
#include "cli/alignment_option.h"

#include <CLI/CLI.hpp>

namespace moe::cli {

CLI::Option* add_alignment_option(CLI::App& app, std::optional<AlignmentOutput>& alignment, const std::string& what) {
  CLI::Option* mode = app.add_option_function<std::string>(
      "--alignment",
      [&alignment](const std::string& v) {
        try {
          alignment = AlignmentOutput::parse(v, "--alignment");
        } catch (const Error& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      "hard|soft|THRESHOLD: " + what +
          ", over subword tokens as Marian writes them, from the attention of the first head of the last decoder "
          "layer over the source; hard: each target position with its most attended source position "
          "('0-0 1-2 ...'), THRESHOLD: every pair with a weight above it, soft: all weights "
          "('t1s1,t1s2,... t2s1,...')");
  mode->type_name("MODE");
  // Defined after --alignment, so that its callback runs after the one that sets `alignment`.
  app.add_flag_callback(
         "--alignment-words",
         [&alignment] {
           if (alignment->kind == AlignmentKind::soft)
             throw CLI::ValidationError("--alignment-words", "needs --alignment hard or a threshold, not soft");
           alignment->words = true;
         },
         "with --alignment hard|THRESHOLD: links between whitespace-separated words (0-based) of the source and of "
         "the output instead of subword tokens, a pair of words linked when any of their tokens are (for AER "
         "against word-level gold alignments: moe-score aer)")
      ->needs(mode);
  return mode;
}

}  // namespace moe::cli
