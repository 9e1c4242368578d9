// Option keys declared once: a Keys<S> table lists, for a struct S of options, each key's dotted name
// (relative to the table's section), the member it fills (or a reader and writer by hand), its help and
// an optional check. From that one declaration follow reading a YAML map (unknown keys, wrong types and
// failed checks are errors naming `section.key`, with the nearest known key), reading a merged recipe
// (Config), writing the options back as YAML (checkpoints, --dump-config), registering the keys in a
// Schema (--help, defaults, suggestions) and the list of names. Value types: bool, integers, floats,
// strings, named enums (common/named_enum.h), vectors of those, string maps and YAML::Node (a map passed
// through). This is the one YAML reading helper of the code base. Covered by tests/config/keys_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/named_enum.h"
#include "config/config.h"
#include "config/schema.h"

namespace moe::config {

/// A check of a key's value; throws (MOE_CHECK) with a message that names `key`.
template <class T>
using Check = std::function<void(const T& value, const std::string& key)>;

/// value >= lo / value > lo / lo <= value <= hi, with errors "<key> must be ..., got <value>".
template <class T>
Check<T> at_least(T lo) {
  return [lo](const T& v, const std::string& key) { MOE_CHECK(v >= lo, key, " must be >= ", lo, ", got ", v); };
}
template <class T>
Check<T> above(T lo) {
  return [lo](const T& v, const std::string& key) { MOE_CHECK(v > lo, key, " must be > ", lo, ", got ", v); };
}
template <class T>
Check<T> in_range(T lo, T hi) {
  return [lo, hi](const T& v, const std::string& key) {
    MOE_CHECK(v >= lo && v <= hi, key, " must be in [", lo, ", ", hi, "], got ", v);
  };
}

namespace detail {
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsStringMap : std::false_type {};
template <>
struct IsStringMap<std::map<std::string, std::string>> : std::true_type {};

template <class T>
constexpr ValueType scalar_type() {
  if constexpr (std::is_same_v<T, bool>)
    return ValueType::Bool;
  else if constexpr (std::is_integral_v<T>)
    return ValueType::Int;
  else if constexpr (std::is_floating_point_v<T>)
    return ValueType::Float;
  else
    return ValueType::String;  // strings and named enums
}

template <class T>
constexpr ValueType value_type() {
  if constexpr (std::is_same_v<T, YAML::Node> || IsStringMap<T>::value) {
    return ValueType::Map;
  } else if constexpr (IsVector<T>::value) {
    constexpr ValueType e = scalar_type<typename T::value_type>();
    return e == ValueType::Int     ? ValueType::IntList
           : e == ValueType::Float ? ValueType::FloatList
                                   : ValueType::StringList;
  } else {
    return scalar_type<T>();
  }
}

[[noreturn]] void type_error(const std::string& key, const YAML::Node& value, ValueType type);

template <class T>
T scalar_from_yaml(const YAML::Node& n, const std::string& key, ValueType type) {
  if (!n.IsScalar()) type_error(key, n, type);
  if constexpr (std::is_enum_v<T>) {
    return parse_enum<T>(n.Scalar(), key);
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    int64_t v = 0;
    if (!YAML::convert<int64_t>::decode(n, v)) type_error(key, n, type);
    MOE_CHECK(static_cast<int64_t>(static_cast<T>(v)) == v, key, ": ", v, " is out of range");
    return static_cast<T>(v);
  } else {
    T v{};
    if (!YAML::convert<T>::decode(n, v)) type_error(key, n, type);
    return v;
  }
}

template <class T>
T from_yaml(const YAML::Node& n, const std::string& key) {
  constexpr ValueType type = value_type<T>();
  if constexpr (std::is_same_v<T, YAML::Node>) {
    if (!n.IsMap() && !n.IsNull()) type_error(key, n, type);
    return YAML::Clone(n);
  } else if constexpr (IsStringMap<T>::value) {
    if (!n.IsMap()) type_error(key, n, type);
    T out;
    for (const auto& kv : n)
      out[kv.first.Scalar()] =
          scalar_from_yaml<std::string>(kv.second, key + "." + kv.first.Scalar(), ValueType::String);
    return out;
  } else if constexpr (IsVector<T>::value) {
    if (!n.IsSequence()) type_error(key, n, type);
    T out;
    for (const auto& item : n)
      out.push_back(scalar_from_yaml<typename T::value_type>(item, key, scalar_type<typename T::value_type>()));
    return out;
  } else {
    return scalar_from_yaml<T>(n, key, type);
  }
}

template <class T>
YAML::Node to_yaml(const T& v) {
  if constexpr (std::is_same_v<T, YAML::Node>) {
    return YAML::Clone(v);  // a null node (an option map never given) stays null
  } else if constexpr (std::is_enum_v<T>) {
    return YAML::Node(enum_name(v));
  } else if constexpr (IsVector<T>::value) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& e : v) {
      if constexpr (std::is_enum_v<typename T::value_type>)
        n.push_back(enum_name(e));
      else
        n.push_back(e);
    }
    return n;
  } else {
    return YAML::Node(v);
  }
}

template <class T>
std::string choices_note() {
  if constexpr (std::is_enum_v<T>)
    return " (" + enum_choices<T>() + ")";
  else
    return "";
}

/// The known name nearest to `name` by edit distance, or "" when none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);
/// Every dotted key of a YAML map: nested maps are descended into unless their path is in `leaves`.
std::vector<std::string> flatten_keys(const YAML::Node& node, const std::vector<std::string>& leaves);
/// The node at dotted `name` inside `node`, or an undefined node.
YAML::Node at_path(const YAML::Node& node, const std::string& name);
/// Sets the node at dotted `name` (creating the maps on the way).
void set_path(YAML::Node& node, const std::string& name, const YAML::Node& value);
}  // namespace detail

template <class S>
class Keys {
 public:
  using Reader = std::function<void(const YAML::Node& value, S& out, const std::string& key)>;
  using Writer = std::function<YAML::Node(const S& in)>;
  struct Key {
    std::string name;  // dotted, relative to the section
    ValueType type;
    std::string help;
    Reader read;
    Writer write;
    bool declared = true;  // false: read and written, but no recipe key (filled in by the program)
  };

  /// `what` names the options in unknown-key errors ("ffn type moe", "a transformer").
  explicit Keys(std::string what = "") : what_(std::move(what)) {}

  /// A key filling `member` (help gets the choices of an enum appended).
  template <class T>
  Keys& add(std::string name, T S::*member, std::string help, std::type_identity_t<Check<T>> check = {}) {
    return add_custom(
        std::move(name), detail::value_type<T>(), help + detail::choices_note<T>(),
        [member, check](const YAML::Node& v, S& s, const std::string& key) {
          T t = detail::from_yaml<T>(v, key);
          if (check) check(t, key);
          s.*member = std::move(t);
        },
        [member](const S& s) { return detail::to_yaml(s.*member); });
  }
  /// A key filling `member` of the nested struct `sub`.
  template <class Sub, class T>
  Keys& add(std::string name, Sub S::*sub, T Sub::*member, std::string help,
            std::type_identity_t<Check<T>> check = {}) {
    return add_custom(
        std::move(name), detail::value_type<T>(), help + detail::choices_note<T>(),
        [sub, member, check](const YAML::Node& v, S& s, const std::string& key) {
          T t = detail::from_yaml<T>(v, key);
          if (check) check(t, key);
          (s.*sub).*member = std::move(t);
        },
        [sub, member](const S& s) { return detail::to_yaml((s.*sub).*member); });
  }
  /// A key filling the member `get` returns (for members nested deeper than one struct).
  template <class T, class Get>
  Keys& add_at(std::string name, Get get, std::string help, std::type_identity_t<Check<T>> check = {}) {
    return add_custom(
        std::move(name), detail::value_type<T>(), help + detail::choices_note<T>(),
        [get, check](const YAML::Node& v, S& s, const std::string& key) {
          T t = detail::from_yaml<T>(v, key);
          if (check) check(t, key);
          get(s) = std::move(t);
        },
        [get](const S& s) { return detail::to_yaml(static_cast<const T&>(get(const_cast<S&>(s)))); });
  }
  /// The keys `names` of another table, over the options `get(s)` returns, as `prefix.name`, each with
  /// `help_prefix` before its help: one declaration shared by several sections (the decoding options).
  template <class Sub, class Get>
  Keys& add_table(const std::string& prefix, Get get, const Keys<Sub>& table, const std::vector<std::string>& names,
                  const std::string& help_prefix = "") {
    for (const std::string& name : names) {
      const auto* k = table.find(name);
      MOE_CHECK(k, "no option key '", name, "' to add as ", prefix, ".", name);
      add_custom(
          prefix + "." + name, k->type, help_prefix + k->help,
          [get, read = k->read](const YAML::Node& v, S& s, const std::string& key) { read(v, get(s), key); },
          [get, write = k->write](const S& s) { return write(get(const_cast<S&>(s))); });
    }
    return *this;
  }
  /// A key read and written by hand (a value spread over several members, aliases, ...).
  Keys& add_custom(std::string name, ValueType type, std::string help, Reader read, Writer write) {
    MOE_CHECK(!find(name), "option key '", name, "' declared twice");
    keys_.push_back(Key{std::move(name), type, std::move(help), std::move(read), std::move(write)});
    return *this;
  }

  /// Marks the key added last as filled in by the program: declare() leaves it out of the schema.
  Keys& internal() {
    keys_.back().declared = false;
    return *this;
  }
  /// A key the table accepts but another reader handles (a site's `type`): read as nothing, never written.
  Keys& accept(std::string name, std::string help) {
    return add_custom(
        std::move(name), ValueType::String, std::move(help), [](const YAML::Node&, S&, const std::string&) {},
        [](const S&) { return YAML::Node(YAML::NodeType::Undefined); });
  }

  const std::vector<Key>& keys() const { return keys_; }
  const Key* find(const std::string& name) const {
    for (const Key& k : keys_)
      if (k.name == name) return &k;
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Key& k : keys_) out.push_back(k.name);
    return out;
  }

  /// Reads the keys present in the map `node` (dotted names descend into nested maps) into `out`;
  /// absent keys keep their values, a null or absent node changes nothing.
  void read(const YAML::Node& node, S& out, const std::string& section) const {
    if (!node || node.IsNull()) return;
    MOE_CHECK(node.IsMap(), section, ": expected a mapping of options, got '", YAML::Dump(node), "'");
    std::vector<std::string> leaves;
    for (const Key& k : keys_)
      if (k.type == ValueType::Map) leaves.push_back(k.name);
    for (const std::string& name : detail::flatten_keys(node, leaves)) {
      if (find(name)) continue;
      const std::string near = detail::nearest_name(name, names());
      MOE_FAIL("unknown option '", full(section, name), "'", what_.empty() ? "" : " for " + what_,
               near.empty() ? std::string() : "; did you mean '" + full(section, near) + "'?");
    }
    for (const Key& k : keys_)
      if (const YAML::Node v = detail::at_path(node, k.name)) k.read(v, out, full(section, k.name));
  }
  /// Reads every key from a merged configuration (Config::get(section.name)).
  void read(const Config& config, S& out, const std::string& section) const {
    for (const Key& k : keys_) k.read(config.get(full(section, k.name)), out, full(section, k.name));
  }
  /// Every key's value as a nested YAML map.
  YAML::Node write(const S& s) const {
    YAML::Node n(YAML::NodeType::Map);
    for (const Key& k : keys_)
      if (const YAML::Node v = k.write(s); v.IsDefined()) detail::set_path(n, k.name, v);
    return n;
  }
  /// Registers every key as `section.name` in `schema`, with its value in `defaults` as the default.
  void declare(Schema& schema, const std::string& section, const S& defaults = S()) const {
    for (const Key& k : keys_) {
      YAML::Node v = k.write(defaults);
      if (!v.IsDefined() || !k.declared) continue;
      if (k.type == ValueType::Map && v.IsNull()) v = YAML::Node(YAML::NodeType::Map);
      schema.add(full(section, k.name), k.type, v, k.help);
    }
  }

 private:
  static std::string full(const std::string& section, const std::string& name) {
    return section.empty() ? name : section + "." + name;
  }
  std::string what_;
  std::vector<Key> keys_;
};

}  // namespace moe::config
