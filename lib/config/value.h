// Typed configuration values: conversion of YAML nodes and command-line strings to the canonical
// YAML form of a schema type (int64 / double / bool / string scalars, sequences of them, maps),
// with errors naming the key, where it came from, the value and the expected type; and the
// scalar formatting used by --dump-config (shortest round-trip floats, quoted ambiguous strings).
// Covered by tests/config/config_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "config/schema.h"

namespace moe::config {

/// Validates `value` (from a YAML file) for `key`; `where` names its origin ("recipe.yml line 3").
YAML::Node convert_yaml(const KeyInfo& key, const YAML::Node& value, const std::string& where);
/// Parses command-line text for `key`: scalars as written; lists as "a,b,c" or YAML "[a, b]".
YAML::Node convert_text(const KeyInfo& key, const std::string& text, const std::string& where);

/// Shortest decimal form of `v` that parses back to the same double, always with '.', 'e', "inf"
/// or "nan" so it reads as a float.
std::string format_float(double v);
/// True when a plain YAML scalar `s` would not read back as the same string (empty, null, bool or
/// number look-alikes), so the dump must quote it.
bool needs_quotes(const std::string& s);

}  // namespace moe::config
