// Schema registration, lookup with nearest-key suggestions (Levenshtein distance), and the --help
// text grouped by section. Covered by tests/config/config_test.cpp.
#include "config/schema.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "config/value.h"

namespace moe::config {

const char* type_name(ValueType type) {
  switch (type) {
    case ValueType::Int:
      return "int";
    case ValueType::Float:
      return "float";
    case ValueType::Bool:
      return "bool";
    case ValueType::String:
      return "string";
    case ValueType::StringList:
      return "list of strings";
    case ValueType::IntList:
      return "list of ints";
    case ValueType::FloatList:
      return "list of floats";
    case ValueType::Map:
      return "map";
  }
  return "?";
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Schema& Schema::add(const std::string& name, ValueType type, const YAML::Node& default_value, const std::string& help) {
  MOE_CHECK(!name.empty() && name.front() != '.' && name.back() != '.' && name.find("..") == std::string::npos &&
                name.find(' ') == std::string::npos,
            "config schema: invalid key name '", name, "'");
  MOE_CHECK(!keys_.count(name), "config schema: key '", name, "' registered twice");
  MOE_CHECK(!is_section(name), "config schema: key '", name, "' is already a section of other keys");
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    MOE_CHECK(!keys_.count(name.substr(0, dot)), "config schema: key '", name, "' would nest under key '",
              name.substr(0, dot), "'");
  KeyInfo info{name, type, YAML::Node(), help};
  info.default_value = convert_yaml(info, default_value, "default");
  keys_.emplace(name, std::move(info));
  return *this;
}

Schema& Schema::add_int(const std::string& n, int64_t d, const std::string& h) {
  return add(n, ValueType::Int, YAML::Node(std::to_string(d)), h);
}
Schema& Schema::add_float(const std::string& n, double d, const std::string& h) {
  return add(n, ValueType::Float, YAML::Node(format_float(d)), h);
}
Schema& Schema::add_bool(const std::string& n, bool d, const std::string& h) {
  return add(n, ValueType::Bool, YAML::Node(d ? "true" : "false"), h);
}
Schema& Schema::add_string(const std::string& n, const std::string& d, const std::string& h) {
  return add(n, ValueType::String, YAML::Node(d), h);
}
Schema& Schema::add_strings(const std::string& n, const std::vector<std::string>& d, const std::string& h) {
  YAML::Node seq(YAML::NodeType::Sequence);
  for (const auto& s : d) seq.push_back(s);
  return add(n, ValueType::StringList, seq, h);
}
Schema& Schema::add_ints(const std::string& n, const std::vector<int64_t>& d, const std::string& h) {
  YAML::Node seq(YAML::NodeType::Sequence);
  for (auto v : d) seq.push_back(std::to_string(v));
  return add(n, ValueType::IntList, seq, h);
}
Schema& Schema::add_floats(const std::string& n, const std::vector<double>& d, const std::string& h) {
  YAML::Node seq(YAML::NodeType::Sequence);
  for (auto v : d) seq.push_back(format_float(v));
  return add(n, ValueType::FloatList, seq, h);
}
Schema& Schema::add_map(const std::string& n, const std::string& h) {
  return add(n, ValueType::Map, YAML::Node(YAML::NodeType::Map), h);
}

const KeyInfo* Schema::find(const std::string& name) const {
  auto it = keys_.find(name);
  return it == keys_.end() ? nullptr : &it->second;
}

const KeyInfo* Schema::map_owner(const std::string& name) const {
  for (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0; dot = name.rfind('.', dot - 1))
    if (const KeyInfo* k = find(name.substr(0, dot))) return k->type == ValueType::Map ? k : nullptr;
  return nullptr;
}

const KeyInfo& Schema::at(const std::string& name) const {
  if (const KeyInfo* k = find(name)) return *k;
  std::string near = nearest(name);
  MOE_FAIL("unknown key '", name, "'", near.empty() ? "" : "; did you mean '" + near + "'?");
}

bool Schema::is_section(const std::string& prefix) const {
  auto it = keys_.lower_bound(prefix + ".");
  return it != keys_.end() && it->first.compare(0, prefix.size() + 1, prefix + ".") == 0;
}

std::string Schema::nearest(const std::string& name) const {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& [k, info] : keys_) {
    std::size_t d = edit_distance(name, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

namespace {
std::string default_text(const KeyInfo& k) {
  const YAML::Node& d = k.default_value;
  if (k.type == ValueType::Float) return format_float(d.as<double>());
  if (d.IsScalar()) return k.type == ValueType::String ? "\"" + d.Scalar() + "\"" : d.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << d;
  return e.c_str();
}
}  // namespace

std::string Schema::help_text() const {
  std::ostringstream os;
  os << "Configuration (defaults < recipe --config FILE < --key value or --key=value):\n"
     << "  --config FILE      YAML recipe (may 'include: base.yml', relative to the recipe)\n"
     << "  --dump-config      print the merged configuration as YAML and exit\n";
  std::map<std::string, std::vector<const KeyInfo*>> groups;  // section -> keys, "general" for undotted
  for (const auto& [name, k] : keys_) {
    auto dot = name.find('.');
    groups[dot == std::string::npos ? "" : name.substr(0, dot)].push_back(&k);
  }
  for (const auto& [sec, keys] : groups) {
    os << "\n[" << (sec.empty() ? "general" : sec) << "]\n";
    for (const KeyInfo* k : keys) {
      os << "  --" << k->name << " " << type_name(k->type) << " (default: " << default_text(*k) << ")\n";
      if (!k->help.empty()) os << "      " << k->help << "\n";
    }
  }
  return os.str();
}

Schema& global_schema() {
  static Schema schema;
  return schema;
}

}  // namespace moe::config
