// A CLI11 option bound to a named enum (common/named_enum.h): the command line takes the value's name,
// a name outside the choices is a parse error listing them, and the program gets the enum, parsed once
// at the edge. Covered by tests/translator/experts_command_test.cpp and translate_cli_test.cpp.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "common/named_enum.h"

namespace moe::cli {

/// `choices` restricts the accepted values (default: every name of E).
template <class E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& flags, E& value, const std::string& help,
                             const std::vector<E>& choices = {}) {
  std::map<std::string, E> names;
  const auto& all = enum_names(E{});
  for (size_t i = 0; i < all.size(); ++i) {
    const E e = static_cast<E>(i);
    bool allowed = choices.empty();
    for (E c : choices) allowed |= c == e;
    if (allowed) names[all[i]] = e;
  }
  return app.add_option(flags, value, help + " (default: " + enum_name(value) + ")")
      ->transform(CLI::CheckedTransformer(names));
}

}  // namespace moe::cli
