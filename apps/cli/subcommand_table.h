// A program of named subcommands on CLI11 (moe-score, moe-vocab): a table of entries, each a name, a
// description and a setup function that adds the subcommand's options to its CLI::App and returns the
// runner called after a successful parse. Adding a subcommand is its own file and one table line.
// Errors (moe::Error) print "<program> <cmd>: error: ..." and return 1; a stop signal's Interrupted
// (common/stop_signal.h) prints its message and returns 75; every program takes --cpu-threads
// (cli/program.h). Covered by tests/metrics/score_cli_test.cpp.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace moe::cli {

/// Runs a parsed subcommand, writing results to `out` and warnings or summaries to `err`; returns the
/// exit status.
using SubcommandRunner = std::function<int(std::ostream& out, std::ostream& err)>;
/// Adds a subcommand's options to `sub` (binding them to state it owns) and returns its runner.
using SubcommandSetup = std::function<SubcommandRunner(CLI::App& sub)>;

struct Subcommand {
  std::string name, description;
  SubcommandSetup setup;
};

class SubcommandTable {
 public:
  explicit SubcommandTable(std::string program, std::string description);
  SubcommandTable(std::string program, std::string description, const std::vector<Subcommand>& entries)
      : SubcommandTable(std::move(program), std::move(description)) {
    for (const auto& e : entries) add(e);
  }
  void add(std::string name, std::string description, SubcommandSetup setup);
  void add(const Subcommand& s) { add(s.name, s.description, s.setup); }
  /// Parses argv (argv[0] is the program) and runs the chosen subcommand. --help anywhere prints
  /// help to `out` and returns 0; parse errors print to `err` and return non-zero.
  int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) const;
  std::vector<std::string> names() const;

 private:
  std::string program_, description_;
  std::vector<Subcommand> entries_;
};

}  // namespace moe::cli
