// Config: defaults, recipe merging with includes (relative paths, cycle detection), command-line
// overrides, typed getters, nested YAML view and --dump-config text.
// Covered by tests/config/config_test.cpp.
#include "config/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "config/value.h"

namespace moe::config {
namespace fs = std::filesystem;

Config::Config(const Schema& schema) : schema_(&schema) {
  for (const auto& [name, info] : schema.keys()) entries_[name] = {YAML::Clone(info.default_value), "default"};
}

void Config::merge_file(const std::string& path) {
  std::vector<std::string> stack;
  merge_file_impl(path, stack, "");
}

void Config::merge_file_impl(const std::string& path, std::vector<std::string>& stack, const std::string& from) {
  std::error_code ec;
  std::string canon = fs::weakly_canonical(path, ec).string();
  if (ec) canon = path;
  auto hit = std::find(stack.begin(), stack.end(), canon);
  if (hit != stack.end()) {
    std::string chain;
    for (auto it = hit; it != stack.end(); ++it) chain += *it + " -> ";
    MOE_FAIL("include cycle in recipes: ", chain, canon);
  }
  std::ifstream in(path, std::ios::binary);
  MOE_CHECK(in.is_open(), "cannot open recipe '", path, "'", from.empty() ? "" : " (included from " + from + ")");
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::ParserException& e) {
    MOE_FAIL("malformed YAML in ", path, " at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  stack.push_back(canon);
  merge_node(root, path, fs::path(path).parent_path().string(), stack);
  stack.pop_back();
}

void Config::merge_text(const std::string& text, const std::string& name, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    MOE_FAIL("malformed YAML in ", name, " at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  std::vector<std::string> stack;
  merge_node(root, name, base_dir, stack);
}

void Config::merge_node(const YAML::Node& root, const std::string& name, const std::string& base_dir,
                        std::vector<std::string>& stack) {
  if (!root.IsDefined() || root.IsNull()) return;  // an empty recipe
  MOE_CHECK(root.IsMap(), "recipe ", name, ": the top level must be a map of keys (line ", root.Mark().line + 1, ")");
  if (YAML::Node inc = root["include"]) {
    std::vector<std::string> files;
    if (inc.IsScalar()) {
      files.push_back(inc.Scalar());
    } else if (inc.IsSequence()) {
      for (const auto& f : inc) {
        MOE_CHECK(f.IsScalar(), "recipe ", name, " line ", f.Mark().line + 1, ": 'include' lists file names");
        files.push_back(f.Scalar());
      }
    } else {
      MOE_FAIL("recipe ", name, " line ", inc.Mark().line + 1, ": 'include' must be a file name or a list of them");
    }
    for (const auto& f : files) {
      fs::path p(f);
      if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
      merge_file_impl(p.string(), stack, name);
    }
  }
  apply_map(root, "", name);
}

void Config::apply_map(const YAML::Node& node, const std::string& prefix, const std::string& file) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string where = file + " line " + std::to_string(it->first.Mark().line + 1);
    MOE_CHECK(it->first.IsScalar(), "recipe ", where, ": keys must be plain names");
    const std::string& key = it->first.Scalar();
    if (prefix.empty() && key == "include") continue;
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (const KeyInfo* info = schema_->find(name)) {
      entries_[name] = {convert_yaml(*info, it->second, where), where};
    } else if (schema_->is_section(name)) {
      MOE_CHECK(it->second.IsMap(), "'", name, "' in ", where, " is a section; expected a map of its keys, got '",
                it->second.IsScalar() ? it->second.Scalar() : std::string("a list"), "'");
      apply_map(it->second, name, file);
    } else {
      std::string near = schema_->nearest(name);
      MOE_FAIL("unknown key '", name, "' in ", file, " (line ", it->first.Mark().line + 1, ")",
               near.empty() ? "" : "; did you mean '" + near + "'?");
    }
  }
}

void Config::set_text(const std::string& key, const std::string& text, const std::string& source) {
  const KeyInfo* info = schema_->find(key);
  if (!info && set_in_map(key, text, source)) return;
  if (!info) {
    std::string near = schema_->nearest(key);
    MOE_FAIL("unknown key '", key, "' on the ", source, near.empty() ? "" : "; did you mean '" + near + "'?");
  }
  entries_[key] = {convert_text(*info, text, source), source};
}

bool Config::set_in_map(const std::string& key, const std::string& text, const std::string& source) {
  const KeyInfo* info = schema_->map_owner(key);
  if (!info) return false;
  auto it = entries_.find(info->name);
  YAML::Node map = it != entries_.end() && it->second.value.IsMap() ? YAML::Clone(it->second.value) : YAML::Node();
  YAML::Node at = map;
  std::string rest = key.substr(info->name.size() + 1);
  for (size_t next; (next = rest.find('.')) != std::string::npos; rest = rest.substr(next + 1)) {
    const std::string part = rest.substr(0, next);
    if (!at[part].IsMap()) at[part] = YAML::Node(YAML::NodeType::Map);
    at.reset(at[part]);  // rebind the handle (operator= would overwrite the content)
  }
  try {
    at[rest] = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    MOE_FAIL("'", key, "' on the ", source, ": malformed YAML value '", text, "': ", e.msg);
  }
  entries_[info->name] = {map, source};
  return true;
}

const Config::Entry& Config::entry(const std::string& key, ValueType want) const {
  const KeyInfo& info = schema_->at(key);
  MOE_CHECK(info.type == want, "config: key '", key, "' is a ", type_name(info.type), ", not a ", type_name(want));
  return entries_.at(key);
}

const YAML::Node& Config::get(const std::string& key) const {
  schema_->at(key);
  return entries_.at(key).value;
}
int64_t Config::get_int(const std::string& k) const { return entry(k, ValueType::Int).value.as<int64_t>(); }
double Config::get_float(const std::string& k) const { return entry(k, ValueType::Float).value.as<double>(); }
bool Config::get_bool(const std::string& k) const { return entry(k, ValueType::Bool).value.as<bool>(); }
std::string Config::get_string(const std::string& k) const {
  return entry(k, ValueType::String).value.as<std::string>();
}
std::vector<std::string> Config::get_strings(const std::string& k) const {
  return entry(k, ValueType::StringList).value.as<std::vector<std::string>>();
}
std::vector<int64_t> Config::get_ints(const std::string& k) const {
  return entry(k, ValueType::IntList).value.as<std::vector<int64_t>>();
}
std::vector<double> Config::get_floats(const std::string& k) const {
  return entry(k, ValueType::FloatList).value.as<std::vector<double>>();
}
const std::string& Config::source(const std::string& key) const {
  schema_->at(key);
  return entries_.at(key).source;
}

bool Config::changed(const std::string& key) const {
  return YAML::Dump(get(key)) != YAML::Dump(schema_->at(key).default_value);
}

YAML::Node Config::to_yaml() const {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& [name, e] : entries_) {
    YAML::Node cur = root;
    std::size_t start = 0;
    for (std::size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1) {
      YAML::Node next = cur[name.substr(start, dot - start)];
      if (!next.IsMap()) next = YAML::Node(YAML::NodeType::Map);
      cur.reset(next);
    }
    cur[name.substr(start)] = YAML::Clone(e.value);
  }
  return root;
}

}  // namespace moe::config
