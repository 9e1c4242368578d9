// decoding_options.h implementation. Covered by tests/translator/decoding_options_test.cpp.
#include "cli/decoding_options.h"

#include <CLI/CLI.hpp>

namespace moe::cli {

namespace {
const char* flag_type(config::ValueType t) {
  switch (t) {
    case config::ValueType::Int:
      return "INT";
    case config::ValueType::Float:
      return "FLOAT";
    default:
      return "TEXT";
  }
}
}  // namespace

void add_decoding_options(CLI::App& app, DecodingOptions& o, const std::vector<std::string>& keys) {
  const config::Keys<DecodingOptions>& table = decoding_keys();
  for (const std::string& name : keys.empty() ? table.names() : keys) {
    const auto* key = table.find(name);
    MOE_CHECK(key, "no decoding option '", name, "'");
    const std::string flag = flag_naming()(name);
    CLI::Option* opt = nullptr;
    if (key->type == config::ValueType::Bool) {  // a switch without a value: --sampling
      opt = app.add_flag_function(
          flag, [&o, read = key->read, flag](int64_t count) { read(YAML::Node(count > 0), o, flag); }, key->help);
    } else {
      opt = app.add_option_function<std::string>(
                   flag,
                   [&o, read = key->read, flag](const std::string& value) {
                     try {
                       read(YAML::Node(value), o, flag);
                     } catch (const Error& e) {
                       throw CLI::ValidationError(e.what());
                     }
                   },
                   key->help)
                ->type_name(flag_type(key->type));
    }
    opt->default_str(YAML::Dump(key->write(o)));
  }
}

}  // namespace moe::cli
