// The recipe arguments of a program configured by a Schema (moe-train), the part of its command line
// that names recipes and keys: `--config FILE` (or -c, repeatable: recipes merged in order) and
// `--key value` / `--key=value` overrides of any recipe key (a bool key alone means true; an entry of
// a map-valued key: --model.attention.name MAE-6); everything else is positional. The program's own
// flags (--help, --resume, ...) are its CLI11 parser's (apps/moe-train/train_cli.cpp), which hands
// these arguments here. load_config applies defaults < recipes < overrides.
// Covered by tests/config/config_test.cpp and tests/fuzz/overrides.cpp.
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
};

/// Parses `args` (without the program name). Unknown --keys throw "unknown key 'x' on the command
/// line; did you mean 'y'?".
CommandLine parse_command_line(const Schema& schema, const std::vector<std::string>& args);
Config load_config(const Schema& schema, const CommandLine& cmd);
Config load_config(const Schema& schema, const std::vector<std::string>& args);

}  // namespace moe::config
