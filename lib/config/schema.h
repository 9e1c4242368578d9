// The configuration schema: every module registers its keys with a dotted name
// ("train.max_tokens"), a type, a default and a help line. The schema validates values
// (value.h), suggests the nearest known key for typos (edit distance) and renders --help grouped
// by section (the part before the first dot). Covered by tests/config/config_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace moe::config {

enum class ValueType { Int, Float, Bool, String, StringList, IntList, FloatList, Map };

/// "int", "float", "bool", "string", "list of strings", "list of ints", "list of floats", "map".
const char* type_name(ValueType type);

struct KeyInfo {
  std::string name;
  ValueType type = ValueType::String;
  YAML::Node default_value;  // already in canonical form (see value.h)
  std::string help;
};

class Schema {
 public:
  /// Registers a key; the default is validated against the type. Throws on a duplicate name or
  /// when one key would be a section of another ("a" and "a.b").
  Schema& add(const std::string& name, ValueType type, const YAML::Node& default_value, const std::string& help);
  Schema& add_int(const std::string& name, int64_t def, const std::string& help);
  Schema& add_float(const std::string& name, double def, const std::string& help);
  Schema& add_bool(const std::string& name, bool def, const std::string& help);
  Schema& add_string(const std::string& name, const std::string& def, const std::string& help);
  Schema& add_strings(const std::string& name, const std::vector<std::string>& def, const std::string& help);
  Schema& add_ints(const std::string& name, const std::vector<int64_t>& def, const std::string& help);
  Schema& add_floats(const std::string& name, const std::vector<double>& def, const std::string& help);
  Schema& add_map(const std::string& name, const std::string& help);

  const KeyInfo* find(const std::string& name) const;
  /// The map-valued key that `name` lies inside ("model.attention" for "model.attention.name"), or null.
  const KeyInfo* map_owner(const std::string& name) const;
  /// Throws "unknown key 'x'; did you mean 'y'?" when absent.
  const KeyInfo& at(const std::string& name) const;
  /// True when some key starts with `prefix` + ".".
  bool is_section(const std::string& prefix) const;
  /// The known key nearest to `name` by edit distance, or "" when none is close
  /// (distance > max(2, |name| / 3)).
  std::string nearest(const std::string& name) const;
  /// --help text generated from the keys, grouped by section.
  std::string help_text() const;
  const std::map<std::string, KeyInfo>& keys() const { return keys_; }

 private:
  std::map<std::string, KeyInfo> keys_;
};

/// Levenshtein distance (insert, delete, substitute; each cost 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The process-wide schema modules register into (explicitly, e.g. register_train_keys(schema),
/// or through a static SchemaRegistrar in a translation unit the program links).
Schema& global_schema();
struct SchemaRegistrar {
  explicit SchemaRegistrar(const std::function<void(Schema&)>& fn) { fn(global_schema()); }
};

}  // namespace moe::config
