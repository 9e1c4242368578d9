// The JSON writer (common/json.h): escaping of quotes, backslashes and control characters, shortest
// round-trip numbers with non-finite values as null, objects with arrays and nested raw JSON, and a
// written object read back by a JSON parser (yaml-cpp) with every value intact.
#include "common/json.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace moe;

TEST_CASE("json: escaping and numbers", "[unit][json]") {
  CHECK(json_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(json_escape("line\nnext\ttab\r") == "line\\nnext\\ttab\\r");
  CHECK(json_escape(std::string("\x01\x1f", 2)) == "\\u0001\\u001f");
  CHECK(json_escape("ünïcode") == "ünïcode");  // UTF-8 passes through
  CHECK(json_number(2.5) == "2.5");
  CHECK(json_number(0.1) == "0.1");
  CHECK(std::strtod(json_number(1.0 / 3).c_str(), nullptr) == 1.0 / 3);  // round trip
  CHECK(json_number(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(json_number(-std::numeric_limits<double>::infinity()) == "null");
}

TEST_CASE("json: objects read back by a JSON parser", "[unit][json]") {
  const std::string nested = JsonObject().add("k", int64_t{3}).str();
  const std::string text = JsonObject()
                               .add("step", 10)
                               .add("loss", 2.5)
                               .add("name", "a \"quoted\" name")
                               .add("ok", true)
                               .add("ppl", std::nan(""))
                               .add("xs", std::vector<double>{1.5, -2})
                               .add("ids", std::vector<int64_t>{7, 8})
                               .add_raw("inner", nested)
                               .str();
  CHECK(text.rfind("{\"step\":10,\"loss\":2.5,", 0) == 0);
  const YAML::Node n = YAML::Load(text);
  CHECK(n["step"].as<int>() == 10);
  CHECK(n["loss"].as<double>() == 2.5);
  CHECK(n["name"].as<std::string>() == "a \"quoted\" name");
  CHECK(n["ok"].as<bool>());
  CHECK(n["ppl"].IsNull());
  CHECK(n["xs"][1].as<double>() == -2);
  CHECK(n["ids"][0].as<int>() == 7);
  CHECK(n["inner"]["k"].as<int>() == 3);
  CHECK(JsonObject().str() == "{}");
}
