// The moe-score command line: a table of named subcommands (bleu, chrf; the lead adds ppl, pairs,
// experts) on CLI11. Each entry's setup function adds its options to its CLI::App and returns the
// runner called after a successful parse. Errors (moe::Error) print "moe-score <cmd>: error: ..."
// and return 1. Covered by tests/metrics/score_cli_test.cpp.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace moe::metrics {

/// Runs a parsed subcommand, writing results to `out` and warnings or summaries to `err`; returns the
/// exit status.
using SubcommandRunner = std::function<int(std::ostream& out, std::ostream& err)>;
/// Adds a subcommand's options to `sub` (binding them to state it owns) and returns its runner.
using SubcommandSetup = std::function<SubcommandRunner(CLI::App& sub)>;

class SubcommandTable {
 public:
  explicit SubcommandTable(std::string program, std::string description);
  void add(std::string name, std::string description, SubcommandSetup setup);
  /// Parses argv (argv[0] is the program) and runs the chosen subcommand. --help anywhere prints
  /// help to `out` and returns 0; parse errors print to `err` and return non-zero.
  int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) const;
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name, description;
    SubcommandSetup setup;
  };
  std::string program_, description_;
  std::vector<Entry> entries_;
};

/// Adds `bleu` and `chrf` to the table.
void register_metric_subcommands(SubcommandTable& table);

/// Lines of a text file ("-" = stdin), without the trailing "\n" (or "\r\n"); errors name the file,
/// and the line of the first one that is not valid UTF-8.
std::vector<std::string> read_lines(const std::string& path);

/// The moe-score program: bleu + chrf (+ whatever `extra` registers).
int score_main(int argc, char** argv, const std::function<void(SubcommandTable&)>& extra = {});

}  // namespace moe::metrics
