// What the line-by-line text programs (moe-translate, moe-generate) share on their command line: the input and
// output paths, where '-' is the standard stream and a file that cannot be opened is an error naming it, and the
// progress flags -q / --log-every. Covered by tests/translator/translate_cli_test.cpp and generate_cli_test.cpp.
#pragma once
#include <fstream>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace moe::cli {

/// The streams of -i PATH and -o PATH ('-': the `std_in` / `std_out` given).
class TextStreams {
 public:
  TextStreams(const std::string& input, const std::string& output, std::istream& std_in, std::ostream& std_out);
  std::istream& in() { return *in_; }
  std::ostream& out() { return *out_; }

 private:
  std::ifstream in_file_;
  std::ofstream out_file_;
  std::istream* in_;
  std::ostream* out_;
};

/// -q,--quiet (no summary or progress on stderr) and --log-every SECONDS (progress lines off a terminal).
void add_progress_options(CLI::App& app, bool& quiet, double& log_every);

}  // namespace moe::cli
