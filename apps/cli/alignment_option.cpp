// alignment_option.h implementation. Covered by tests/translator/translate_cli_test.cpp.
#include "cli/alignment_option.h"

#include <CLI/CLI.hpp>

namespace moe::cli {

CLI::Option* add_alignment_option(CLI::App& app, std::optional<AlignmentOutput>& alignment, const std::string& what) {
  return app
      .add_option_function<std::string>(
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
              "('t1s1,t1s2,... t2s1,...')")
      ->type_name("MODE");
}

}  // namespace moe::cli
