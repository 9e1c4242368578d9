// SubcommandTable (CLI11-based subcommand dispatch for moe-score), read_lines, score_main.
// Covered by tests/metrics/score_cli_test.cpp.
#include "metrics/score_cli.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "common/error.h"
#include "data/utf8.h"

namespace moe::metrics {

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
  std::vector<std::pair<CLI::App*, SubcommandRunner>> runners;
  for (const auto& e : entries_) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
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
    } catch (const Error& e) {
      err << program_ << " " << sub->get_name() << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  return 1;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    MOE_CHECK(file.is_open(), "cannot open '", path, "'");
    in = &file;
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t bad = data::find_invalid_utf8(line);
    MOE_CHECK(bad == std::string::npos, "'", path, "' line ", lines.size() + 1, " is not valid UTF-8 (byte ", bad + 1,
              " of the line); sacreBLEU would refuse it too");
    lines.push_back(std::move(line));
  }
  MOE_CHECK(!in->bad(), "error reading '", path, "'");
  return lines;
}

int score_main(int argc, char** argv, const std::function<void(SubcommandTable&)>& extra) {
  SubcommandTable table("moe-score", "moe-score: evaluation metrics (BLEU and chrF as sacreBLEU computes them)");
  register_metric_subcommands(table);
  if (extra) extra(table);
  std::vector<std::string> args(argv, argv + argc);
  return table.run(args, std::cout, std::cerr);
}

}  // namespace moe::metrics
