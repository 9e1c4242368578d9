// keys.h implementation: the non-template helpers. Covered by tests/config/keys_test.cpp.
#include "config/keys.h"

#include <algorithm>

namespace moe::config::detail {

void type_error(const std::string& key, const YAML::Node& value, ValueType type) {
  std::string text = YAML::Dump(value);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  MOE_FAIL(key, ": cannot read '", text, "' as ", type_name(type));
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& k : known) {
    const size_t d = edit_distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

namespace {
void flatten(const YAML::Node& node, const std::string& prefix, const std::vector<std::string>& leaves,
             std::vector<std::string>& out) {
  for (const auto& kv : node) {
    const std::string name = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    const bool leaf = std::find(leaves.begin(), leaves.end(), name) != leaves.end();
    if (kv.second.IsMap() && !leaf && kv.second.size() > 0)
      flatten(kv.second, name, leaves, out);
    else
      out.push_back(name);
  }
}
}  // namespace

std::vector<std::string> flatten_keys(const YAML::Node& node, const std::vector<std::string>& leaves) {
  std::vector<std::string> out;
  flatten(node, "", leaves, out);
  return out;
}

YAML::Node at_path(const YAML::Node& node, const std::string& name) {
  // Node::reset rebinds; operator= would overwrite the node it refers to inside the caller's tree.
  YAML::Node cur;
  cur.reset(node);
  size_t begin = 0;
  while (true) {
    const size_t dot = name.find('.', begin);
    const std::string part = name.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!cur.IsMap() || !cur[part]) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node next = cur[part];
    cur.reset(next);
    if (dot == std::string::npos) return cur;
    begin = dot + 1;
  }
}

void set_path(YAML::Node& node, const std::string& name, const YAML::Node& value) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) {
    node[name] = value;
    return;
  }
  const std::string head = name.substr(0, dot);
  YAML::Node child(YAML::NodeType::Map);
  if (node[head] && node[head].IsMap()) child.reset(node[head]);
  set_path(child, name.substr(dot + 1), value);
  node[head] = child;
}

}  // namespace moe::config::detail
