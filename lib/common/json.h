// A minimal JSON writer (objects of scalars, arrays and nested objects) for metrics.jsonl lines,
// safetensors headers and `--format json` outputs. Parsing JSON goes through yaml-cpp (JSON is YAML).
// Covered by tests/unit/json_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

/// Escapes a string for inclusion between double quotes in JSON.
std::string json_escape(const std::string& s);

/// Builds one JSON object: JsonObject().add("step", 10).add("loss", 2.5).str() == {"step":10,"loss":2.5}
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, int64_t value);
  JsonObject& add(const std::string& key, int value) { return add(key, static_cast<int64_t>(value)); }
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const std::vector<double>& values);
  JsonObject& add(const std::string& key, const std::vector<int64_t>& values);
  /// Inserts already-serialised JSON (a nested object or array) verbatim.
  JsonObject& add_raw(const std::string& key, const std::string& json);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

/// Shortest round-trip text of a double; non-finite values become null (JSON has no NaN).
std::string json_number(double v);

}  // namespace moe
