// Value conversion and formatting for the configuration system (see value.h).
// Ints: optional sign and decimal digits only; floats: strtod over the whole text (plus YAML's
// .inf/.nan); bools: true/false/yes/no/on/off in any case. Covered by tests/config/config_test.cpp.
#include "config/value.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/error.h"

namespace moe::config {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool parse_int(const std::string& s, int64_t& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e && b != e;
}

bool parse_float(const std::string& s, double& out) {
  std::string l = lower(s);
  if (l == ".inf" || l == "+.inf") return out = std::numeric_limits<double>::infinity(), true;
  if (l == "-.inf") return out = -std::numeric_limits<double>::infinity(), true;
  if (l == ".nan") return out = std::numeric_limits<double>::quiet_NaN(), true;
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool parse_bool(const std::string& s, bool& out) {
  std::string l = lower(s);
  if (l == "true" || l == "yes" || l == "on") return out = true, true;
  if (l == "false" || l == "no" || l == "off") return out = false, true;
  return false;
}

bool is_null_word(const std::string& s) { return s == "~" || lower(s) == "null"; }

[[noreturn]] void type_error(const KeyInfo& key, const std::string& where, const std::string& got,
                             const char* expected) {
  MOE_FAIL("wrong type for key '", key.name, "' (", where, "): got ", got, ", expected ", expected);
}

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "null";
}

ValueType element_type(ValueType t) {
  return t == ValueType::StringList ? ValueType::String : t == ValueType::IntList ? ValueType::Int : ValueType::Float;
}

YAML::Node convert_scalar(const KeyInfo& key, ValueType type, const std::string& s, const std::string& where,
                          const char* expected) {
  switch (type) {
    case ValueType::Int: {
      int64_t v;
      if (!parse_int(s, v)) type_error(key, where, "'" + s + "'", expected);
      return YAML::Node(v);
    }
    case ValueType::Float: {
      double v;
      if (!parse_float(s, v)) type_error(key, where, "'" + s + "'", expected);
      return YAML::Node(v);
    }
    case ValueType::Bool: {
      bool v;
      if (!parse_bool(s, v)) type_error(key, where, "'" + s + "'", expected);
      return YAML::Node(v);
    }
    default:
      return YAML::Node(s);
  }
}

}  // namespace

YAML::Node convert_yaml(const KeyInfo& key, const YAML::Node& value, const std::string& where) {
  const char* expected = type_name(key.type);
  switch (key.type) {
    case ValueType::Map:
      if (value.IsNull()) return YAML::Node(YAML::NodeType::Map);
      if (!value.IsMap()) type_error(key, where, describe(value), expected);
      return YAML::Clone(value);
    case ValueType::StringList:
    case ValueType::IntList:
    case ValueType::FloatList: {
      YAML::Node seq(YAML::NodeType::Sequence);
      if (value.IsNull()) return seq;
      if (!value.IsSequence()) type_error(key, where, describe(value), expected);
      for (const auto& item : value) {
        if (!item.IsScalar()) type_error(key, where, describe(item) + " inside the list", expected);
        seq.push_back(convert_scalar(key, element_type(key.type), item.Scalar(), where, expected));
      }
      return seq;
    }
    case ValueType::String:
      if (value.IsNull()) return YAML::Node(std::string());
      [[fallthrough]];
    default:
      if (!value.IsScalar()) type_error(key, where, describe(value), expected);
      return convert_scalar(key, key.type, value.Scalar(), where, expected);
  }
}

YAML::Node convert_text(const KeyInfo& key, const std::string& text, const std::string& where) {
  switch (key.type) {
    case ValueType::Map: {
      YAML::Node n;
      try {
        n = YAML::Load(text);
      } catch (const YAML::Exception& e) {
        type_error(key, where, "'" + text + "' (" + e.msg + ")", "map");
      }
      return convert_yaml(key, n, where);
    }
    case ValueType::StringList:
    case ValueType::IntList:
    case ValueType::FloatList: {
      if (!text.empty() && text.front() == '[') {
        YAML::Node n;
        try {
          n = YAML::Load(text);
        } catch (const YAML::Exception& e) {
          type_error(key, where, "'" + text + "' (" + e.msg + ")", type_name(key.type));
        }
        return convert_yaml(key, n, where);
      }
      YAML::Node seq(YAML::NodeType::Sequence);
      if (text.empty()) return seq;
      std::size_t pos = 0;
      while (true) {
        std::size_t comma = text.find(',', pos);
        seq.push_back(
            convert_scalar(key, element_type(key.type), text.substr(pos, comma - pos), where, type_name(key.type)));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      return seq;
    }
    default:
      return convert_scalar(key, key.type, text, where, type_name(key.type));
  }
}

std::string format_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

bool needs_quotes(const std::string& s) {
  if (s.empty() || is_null_word(s)) return true;
  int64_t i;
  double d;
  bool b;
  return parse_int(s, i) || parse_float(s, d) || parse_bool(s, b) || s.front() == ' ' || s.back() == ' ';
}

}  // namespace moe::config
