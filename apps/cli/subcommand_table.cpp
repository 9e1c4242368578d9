// subcommand_table.h implementation. Covered by tests/metrics/score_cli_test.cpp.
#include "cli/subcommand_table.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "cli/program.h"
#include "common/error.h"
#include "common/stop_signal.h"

namespace moe::cli {

SubcommandTable::SubcommandTable(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

void SubcommandTable::add(std::string name, std::string description, SubcommandSetup setup) {
  for (const auto& e : entries_) MOE_CHECK(e.name != name, program_, ": subcommand '", name, "' registered twice");
  entries_.push_back({std::move(name), std::move(description), std::move(setup)});
}

std::vector<std::string> SubcommandTable::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

int SubcommandTable::run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) const {
  CLI::App app(description_, program_);
  app.require_subcommand(1);
  add_cpu_threads_option(app);
  std::vector<std::pair<CLI::App*, SubcommandRunner>> runners;
  for (const auto& e : entries_) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    sub->fallthrough();  // --cpu-threads after the subcommand's name
    runners.emplace_back(sub, e.setup(*sub));
  }
  std::vector<const char*> args;
  for (const auto& a : argv) args.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  for (auto& [sub, runner] : runners) {
    if (!sub->parsed()) continue;
    try {
      return runner(out, err);
    } catch (const Interrupted& e) {  // a stop signal (common/stop_signal.h)
      err << e.what() << "\n";
      return kExitStopped;
    } catch (const Error& e) {
      err << program_ << " " << sub->get_name() << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  return 1;
}

}  // namespace moe::cli
