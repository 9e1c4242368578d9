// Command-line handling for programs configured by a Schema: `--config FILE` (or -c, repeatable:
// recipes merged in order), `--key value` / `--key=value` overrides (a bool key alone means true),
// `--dump-config`, `--help` (-h); everything else is positional. load_config applies defaults <
// recipes < overrides. Covered by tests/config/config_test.cpp.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/schema.h"

namespace moe::config {

struct CommandLine {
  std::vector<std::string> recipes;
  std::vector<std::pair<std::string, std::string>> overrides;  // key, text
  std::vector<std::string> positional;
  bool dump_config = false;
  bool help = false;
};

/// Parses `args` (without the program name). Unknown --keys throw "unknown key 'x' on the command
/// line; did you mean 'y'?".
CommandLine parse_command_line(const Schema& schema, const std::vector<std::string>& args);
Config load_config(const Schema& schema, const CommandLine& cmd);
Config load_config(const Schema& schema, const std::vector<std::string>& args);

}  // namespace moe::config
