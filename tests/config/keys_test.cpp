// Option keys declared once (config/keys.h) and named enums (common/named_enum.h): reading a YAML map
// (nested keys, absent keys keep their values, unknown keys with the nearest one, wrong types, checks,
// enums with their choices), writing back, registering in a Schema and reading a merged Config; a
// table's keys shared under other sections (add_table).
#include "config/keys.h"

#include <catch2/catch.hpp>

#include "config/recipe_args.h"

using namespace moe;
using namespace moe::config;

namespace {
MOE_NAMED_ENUM(Color, red, green, light_blue)

struct Inner {
  double rate = 0.5;
};
struct Opts {
  int64_t width = 4;
  int layers = 2;
  bool on = true;
  std::string name = "x";
  Color color = Color::green;
  std::vector<int64_t> sizes{1, 2};
  std::vector<std::string> tags;
  std::map<std::string, std::string> roles;
  YAML::Node extra;
  Inner inner;
};

const Keys<Opts>& opts_keys() {
  static const Keys<Opts> k = Keys<Opts>("a test")
                                  .add("width", &Opts::width, "width", above<int64_t>(0))
                                  .add("layers", &Opts::layers, "layers", in_range(1, 8))
                                  .add("on", &Opts::on, "switch")
                                  .add("name", &Opts::name, "name")
                                  .add("color", &Opts::color, "color")
                                  .add("sizes", &Opts::sizes, "sizes")
                                  .add("tags", &Opts::tags, "tags")
                                  .add("roles", &Opts::roles, "role map")
                                  .add("extra", &Opts::extra, "free map")
                                  .add("inner.rate", &Opts::inner, &Inner::rate, "nested");
  return k;
}

std::string read_error(const std::string& yaml) {
  Opts o;
  try {
    opts_keys().read(YAML::Load(yaml), o, "model");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("named enums: names in order, parse errors list the choices", "[config][keys]") {
  CHECK(enum_name(Color::light_blue) == "light_blue");
  CHECK(parse_enum<Color>("red", "k") == Color::red);
  CHECK(enum_choices<Color>() == "red | green | light_blue");
  CHECK_THROWS_WITH(parse_enum<Color>("blue", "model.color"),
                    Catch::Contains("model.color: 'blue' is not one of red | green | light_blue"));
}

TEST_CASE("keys: a YAML map is read into the struct, absent keys keep their values", "[config][keys]") {
  Opts o;
  opts_keys().read(YAML::Load("{width: 9, color: light_blue, sizes: [3, 4, 5], roles: {a: b}, inner: {rate: 2}, "
                              "extra: {type: moe, k: 2}}"),
                   o, "model");
  CHECK(o.width == 9);
  CHECK(o.layers == 2);
  CHECK(o.color == Color::light_blue);
  CHECK(o.sizes == std::vector<int64_t>{3, 4, 5});
  CHECK(o.roles.at("a") == "b");
  CHECK(o.inner.rate == 2.0);
  CHECK(o.extra["k"].as<int>() == 2);
  const YAML::Node w = opts_keys().write(o);
  CHECK(w["color"].as<std::string>() == "light_blue");
  CHECK(w["inner"]["rate"].as<double>() == 2.0);
  Opts back;
  opts_keys().read(w, back, "model");  // what was written reads back
  CHECK(back.sizes == o.sizes);
  CHECK(back.inner.rate == 2.0);
  CHECK(back.extra["type"].as<std::string>() == "moe");
}

TEST_CASE("keys: errors name the full key", "[config][keys]") {
  CHECK_THAT(read_error("{widht: 3}"),
             Catch::Contains("unknown option 'model.widht' for a test; did you mean 'model.width'?"));
  CHECK_THAT(read_error("{inner: {rat: 1}}"), Catch::Contains("unknown option 'model.inner.rat'"));
  CHECK_THAT(read_error("{width: abc}"), Catch::Contains("model.width: cannot read 'abc' as int"));
  CHECK_THAT(read_error("{width: 0}"), Catch::Contains("model.width must be > 0, got 0"));
  CHECK_THAT(read_error("{layers: 9}"), Catch::Contains("model.layers must be in [1, 8], got 9"));
  CHECK_THAT(read_error("{layers: 99999999999}"), Catch::Contains("model.layers: 99999999999 is out of range"));
  CHECK_THAT(read_error("{color: blue}"), Catch::Contains("model.color: 'blue' is not one of"));
  CHECK_THAT(read_error("{sizes: 3}"), Catch::Contains("model.sizes: cannot read '3' as list of ints"));
  CHECK_THAT(read_error("[1, 2]"), Catch::Contains("model: expected a mapping of options"));
  CHECK(read_error("~").empty());  // a null section changes nothing
}

TEST_CASE("keys: declared in a schema, read back from a merged recipe", "[config][keys]") {
  Schema schema;
  opts_keys().declare(schema, "model");
  REQUIRE(schema.find("model.inner.rate"));
  CHECK(schema.find("model.color")->type == ValueType::String);
  CHECK_THAT(schema.find("model.color")->help, Catch::Contains("red | green | light_blue"));
  CHECK(schema.find("model.sizes")->default_value.size() == 2);
  Config c = load_config(schema, std::vector<std::string>{"--model.width", "7", "--model.color", "red"});
  Opts o;
  opts_keys().read(c, o, "model");
  CHECK(o.width == 7);
  CHECK(o.color == Color::red);
  CHECK(o.inner.rate == 0.5);
  c.set_text("model.color", "purple");
  CHECK_THROWS_WITH(opts_keys().read(c, o, "model"), Catch::Contains("model.color: 'purple' is not one of"));
}

TEST_CASE("keys: a table's keys shared under another section (add_table)", "[config][keys]") {
  struct Outer {
    Opts a, b;
  };
  Keys<Outer> k("outer");
  k.add_table("a", [](Outer& o) -> Opts& { return o.a; }, opts_keys(), {"width", "color"}, "A: ")
      .add_table("b", [](Outer& o) -> Opts& { return o.b; }, opts_keys(), {"width"});
  CHECK(k.names() == std::vector<std::string>{"a.width", "a.color", "b.width"});
  CHECK(k.find("a.width")->help == "A: width");
  Outer o;
  k.read(YAML::Load("{a: {width: 7, color: red}, b: {width: 9}}"), o, "");
  CHECK(o.a.width == 7);
  CHECK(o.a.color == Color::red);
  CHECK(o.b.width == 9);
  CHECK(o.b.color == Color::green);  // not declared under b: untouched
  CHECK_THROWS_WITH(k.read(YAML::Load("{b: {width: 0}}"), o, ""), Catch::Contains("b.width must be > 0"));
  CHECK_THROWS_WITH(k.read(YAML::Load("{b: {color: red}}"), o, ""), Catch::Contains("'b.color'"));
  Schema schema;
  k.declare(schema, "s");
  CHECK(schema.at("s.a.width").default_value.as<int64_t>() == 4);
  CHECK(k.write(o)["a"]["width"].as<int64_t>() == 7);
  CHECK_THROWS_WITH(k.add_table("c", [](Outer& x) -> Opts& { return x.a; }, opts_keys(), {"depth"}),
                    Catch::Contains("'depth'"));
}
