// Enums whose values have names (options such as `activation: gelu`): MOE_NAMED_ENUM(Activation, relu,
// gelu) declares `enum class Activation { relu, gelu }` and `enum_names(Activation)`, the names in
// declaration order, found by argument-dependent lookup. An enum whose names are not C++ identifiers
// (`auto`) declares enum_names by hand. enum_name / parse_enum / enum_choices work on any such enum;
// parse_enum's error names the key and lists the choices, so options are parsed once, at the edge.
// Covered by tests/config/keys_test.cpp.
#pragma once
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"

namespace moe {

/// "relu, gelu" -> {"relu", "gelu"} (the names of MOE_NAMED_ENUM's stringized list).
std::vector<std::string> split_enum_names(const char* list);

template <class E>
const std::string& enum_name(E value) {
  const auto& names = enum_names(E{});
  const auto i = static_cast<size_t>(static_cast<std::underlying_type_t<E>>(value));
  MOE_CHECK(i < names.size(), "enum value ", i, " has no name");
  return names[i];
}

/// "relu | gelu".
template <class E>
std::string enum_choices() {
  std::string out;
  for (const auto& n : enum_names(E{})) out += (out.empty() ? "" : " | ") + n;
  return out;
}

/// The value called `text`; an error names `key`, the text and the choices.
template <class E>
E parse_enum(const std::string& text, const std::string& key) {
  const auto& names = enum_names(E{});
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<E>(i);
  MOE_FAIL(key, ": '", text, "' is not one of ", enum_choices<E>());
}

}  // namespace moe

#define MOE_NAMED_ENUM(Name, ...)                                                        \
  enum class Name { __VA_ARGS__ };                                                       \
  inline const std::vector<std::string>& enum_names(Name) {                              \
    static const std::vector<std::string> names = ::moe::split_enum_names(#__VA_ARGS__); \
    return names;                                                                        \
  }
