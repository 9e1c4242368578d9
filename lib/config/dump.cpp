// dump_config: the merged configuration as YAML, sections as nested maps in key order, floats in
// shortest round-trip form, ambiguous strings quoted, lists and maps in flow style; loading the text back as
// a recipe reproduces every value. Covered by tests/config/config_test.cpp (round trip).
#include <map>

#include "config/config.h"
#include "config/value.h"

namespace moe::config {
namespace {

struct Tree {
  std::map<std::string, Tree> children;
  const Config::Entry* entry = nullptr;
  const KeyInfo* info = nullptr;
};

void emit_scalar(YAML::Emitter& out, ValueType type, const YAML::Node& v) {
  switch (type) {
    case ValueType::Float:
      out << format_float(v.as<double>());
      break;
    case ValueType::String: {
      std::string s = v.as<std::string>();
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    default:
      out << v.Scalar();
  }
}

void emit_value(YAML::Emitter& out, const KeyInfo& info, const YAML::Node& v) {
  switch (info.type) {
    case ValueType::StringList:
    case ValueType::IntList:
    case ValueType::FloatList: {
      ValueType elem = info.type == ValueType::StringList ? ValueType::String
                       : info.type == ValueType::IntList  ? ValueType::Int
                                                          : ValueType::Float;
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& item : v) emit_scalar(out, elem, item);
      out << YAML::EndSeq;
      break;
    }
    case ValueType::Map: {  // in flow style always: a default {} and a loaded one dump the same
      YAML::Node flow = YAML::Clone(v);
      flow.SetStyle(YAML::EmitterStyle::Flow);
      out << flow;
      break;
    }
    default:
      emit_scalar(out, info.type, v);
  }
}

void emit_tree(YAML::Emitter& out, const Tree& t) {
  out << YAML::BeginMap;
  for (const auto& [k, child] : t.children) {
    out << YAML::Key << k << YAML::Value;
    if (child.entry)
      emit_value(out, *child.info, child.entry->value);
    else
      emit_tree(out, child);
  }
  out << YAML::EndMap;
}

}  // namespace

std::string dump_config(const Config& config) {
  Tree root;
  for (const auto& [name, e] : config.entries()) {
    Tree* cur = &root;
    std::size_t start = 0;
    for (std::size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1)
      cur = &cur->children[name.substr(start, dot - start)];
    Tree& leaf = cur->children[name.substr(start)];
    leaf.entry = &e;
    leaf.info = config.schema().find(name);
  }
  if (root.children.empty()) return "{}\n";
  YAML::Emitter out;
  emit_tree(out, root);
  return std::string(out.c_str()) + "\n";
}

}  // namespace moe::config
