// A merged configuration: defaults < YAML recipes (with recursive `include:`, resolved relative to
// the including file, cycles detected) < command-line overrides. Values are validated against the
// Schema and stored per dotted key with the place they came from; the merged tree is available as
// a yaml-cpp node or as YAML text (--dump-config). Covered by tests/config/config_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/schema.h"

namespace moe::config {

class Config {
 public:
  struct Entry {
    YAML::Node value;    // canonical form for the key's type
    std::string source;  // "default", "recipe.yml line 3", "command line"
  };

  /// All keys at their defaults.
  explicit Config(const Schema& schema);

  /// Merges a YAML recipe file (its includes first, then its own keys). Errors name the file and
  /// line: malformed YAML, unknown keys (with the nearest known key), wrong types, include cycles.
  void merge_file(const std::string& path);
  /// Merges YAML text; `name` stands for the file in messages; includes resolve against `base_dir`.
  void merge_text(const std::string& text, const std::string& name, const std::string& base_dir = ".");
  /// Sets one key from command-line text ("8000", "a,b", "[1, 2]"). A key inside a map-valued key sets
  /// that entry of the map: "model.attention.name" with "MAE-6" (the value is read as YAML).
  void set_text(const std::string& key, const std::string& text, const std::string& source = "command line");

  const YAML::Node& get(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  std::vector<int64_t> get_ints(const std::string& key) const;
  std::vector<double> get_floats(const std::string& key) const;
  /// Where the key's current value came from.
  const std::string& source(const std::string& key) const;
  /// True when `key` holds a value other than its default (a dumped configuration sets every key, defaults too).
  bool changed(const std::string& key) const;

  const std::map<std::string, Entry>& entries() const { return entries_; }
  const Schema& schema() const { return *schema_; }
  /// The merged configuration as a nested YAML map (sections become maps).
  YAML::Node to_yaml() const;

 private:
  bool set_in_map(const std::string& key, const std::string& text, const std::string& source);
  void merge_node(const YAML::Node& root, const std::string& name, const std::string& base_dir,
                  std::vector<std::string>& stack);
  void merge_file_impl(const std::string& path, std::vector<std::string>& stack, const std::string& from);
  void apply_map(const YAML::Node& node, const std::string& prefix, const std::string& file);
  const Entry& entry(const std::string& key, ValueType want) const;

  const Schema* schema_;
  std::map<std::string, Entry> entries_;
};

/// The merged configuration as YAML text, keys sorted and grouped by section; loading it back as a
/// recipe reproduces every value.
std::string dump_config(const Config& config);

}  // namespace moe::config
