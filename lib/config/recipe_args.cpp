// parse_command_line / load_config (see recipe_args.h). Covered by tests/config/config_test.cpp.
#include "config/recipe_args.h"

#include "common/error.h"

namespace moe::config {

CommandLine parse_command_line(const Schema& schema, const std::vector<std::string>& args) {
  CommandLine cmd;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      cmd.positional.insert(cmd.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (a == "-c") {
      MOE_CHECK(i + 1 < args.size(), "command line: -c needs a recipe file");
      cmd.recipes.push_back(args[++i]);
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      MOE_CHECK(a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9'), "command line: unknown option '", a, "'");
      cmd.positional.push_back(a);
      continue;
    }
    std::string body = a.substr(2);
    auto eq = body.find('=');
    std::string name = body.substr(0, eq);
    bool has_value = eq != std::string::npos;
    std::string value = has_value ? body.substr(eq + 1) : "";
    if (name == "config") {
      if (!has_value) {
        MOE_CHECK(i + 1 < args.size(), "command line: --config needs a recipe file");
        value = args[++i];
      }
      cmd.recipes.push_back(value);
      continue;
    }
    const KeyInfo* info = schema.find(name);
    if (!info) info = schema.map_owner(name);  // an entry inside a map-valued key: needs a value
    if (!info) {
      std::string near = schema.nearest(name);
      MOE_FAIL("unknown key '", name, "' on the command line", near.empty() ? "" : "; did you mean '" + near + "'?");
    }
    if (!has_value) {
      bool next_is_value = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
      if (info->type == ValueType::Bool && !next_is_value) {
        value = "true";
      } else {
        MOE_CHECK(i + 1 < args.size(), "command line: --", name, " needs a value (", type_name(info->type), ")");
        value = args[++i];
      }
    }
    cmd.overrides.emplace_back(name, value);
  }
  return cmd;
}

Config load_config(const Schema& schema, const CommandLine& cmd) {
  Config config(schema);
  for (const auto& r : cmd.recipes) config.merge_file(r);
  for (const auto& [key, text] : cmd.overrides) config.set_text(key, text, "command line");
  return config;
}

Config load_config(const Schema& schema, const std::vector<std::string>& args) {
  return load_config(schema, parse_command_line(schema, args));
}

}  // namespace moe::config
