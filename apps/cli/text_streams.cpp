// text_streams.h implementation. Covered by tests/translator/translate_cli_test.cpp and generate_cli_test.cpp.
#include "cli/text_streams.h"

#include <CLI/CLI.hpp>

#include "common/error.h"

namespace moe::cli {

TextStreams::TextStreams(const std::string& input, const std::string& output, std::istream& std_in,
                         std::ostream& std_out)
    : in_(&std_in), out_(&std_out) {
  if (input != "-") {
    in_file_.open(input, std::ios::binary);
    MOE_CHECK(in_file_.is_open(), "cannot open input '", input, "'");
    in_ = &in_file_;
  }
  if (output != "-") {
    out_file_.open(output, std::ios::binary);
    MOE_CHECK(out_file_.is_open(), "cannot open output '", output, "'");
    out_ = &out_file_;
  }
}

void add_progress_options(CLI::App& app, bool& quiet, double& log_every) {
  app.add_flag("-q,--quiet", quiet, "no summary or progress on stderr");
  app.add_option("--log-every", log_every,
                 "seconds between progress lines on stderr when it is not a terminal (0 = none; on a terminal one "
                 "line is redrawn in place)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

}  // namespace moe::cli
