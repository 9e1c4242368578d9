// Configuration system tests: precedence (defaults < recipe < command line), includes (relative,
// nested, cycles), unknown-key suggestions, type errors, malformed YAML with line numbers,
// --dump-config round trip, --help text, schema registration errors.
#include "config/config.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "config/recipe_args.h"
#include "config/value.h"

using namespace moe::config;
namespace fs = std::filesystem;

namespace {
Schema make_schema() {
  Schema s;
  s.add_int("train.max_tokens", 4096, "tokens per batch")
      .add_float("train.lr", 1e-3, "peak learning rate")
      .add_bool("train.shuffle", true, "shuffle batches")
      .add_string("model.name", "transformer", "architecture")
      .add_strings("data.files", {"a.txt", "b.txt"}, "training files")
      .add_ints("model.layers", {6, 6}, "encoder, decoder layers")
      .add_floats("train.betas", {0.9, 0.98}, "Adam betas")
      .add_map("model.extra", "free-form options")
      .add_int("seed", 1, "random seed")
      .add_string("train.note", "", "free text");
  return s;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("moe_config_test_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const moe::Error& e) {
    return e.what();
  }
  return "<no error>";
}
}  // namespace

TEST_CASE("config: defaults < recipe < command line", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  auto recipe = dir.write("recipe.yml", "train:\n  max_tokens: 8000\n  lr: 5e-4\nmodel.name: big\nseed: 7\n");
  Config c = load_config(schema, {"--config", recipe, "--train.max_tokens", "12000", "--seed=9"});
  CHECK(c.get_int("train.max_tokens") == 12000);
  CHECK(c.source("train.max_tokens") == "command line");
  CHECK(c.get_float("train.lr") == 5e-4);
  CHECK_THAT(c.source("train.lr"), Catch::Contains("recipe.yml line 3"));
  CHECK(c.get_string("model.name") == "big");
  CHECK(c.get_int("seed") == 9);
  CHECK(c.get_bool("train.shuffle") == true);
  CHECK(c.source("train.shuffle") == "default");
  CHECK(c.changed("train.max_tokens"));
  CHECK_FALSE(c.changed("train.shuffle"));
  CHECK(c.get_strings("data.files") == std::vector<std::string>{"a.txt", "b.txt"});
  CHECK(c.get_floats("train.betas") == std::vector<double>{0.9, 0.98});
  // Order on the command line does not matter: recipes first, then overrides in order.
  Config d = load_config(schema, {"--train.lr=0.01", "-c", recipe, "--train.lr", "0.02", "--train.shuffle",
                                  "--data.files", "x,y,z", "--model.layers=[2, 3]", "pos.txt"});
  CHECK(d.get_float("train.lr") == 0.02);
  CHECK(d.get_bool("train.shuffle") == true);
  CHECK_FALSE(d.changed("train.shuffle"));  // set, but to its default
  CHECK(d.get_strings("data.files") == std::vector<std::string>{"x", "y", "z"});
  CHECK(d.get_ints("model.layers") == std::vector<int64_t>{2, 3});
  CommandLine cmd = parse_command_line(schema, {"pos", "--train.shuffle=no"});
  CHECK(cmd.positional == std::vector<std::string>{"pos"});
  CHECK_THAT(error_of([&] { parse_command_line(schema, {"--dump-config"}); }),
             Catch::Contains("unknown key 'dump-config'"));  // a program flag: moe-train's own parser has it
  CHECK(load_config(schema, cmd).get_bool("train.shuffle") == false);
}

TEST_CASE("config: entries inside a map-valued key are set from the command line", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  auto recipe = dir.write("map.yml", "model:\n  extra: {type: mae, name: MAE-7, gate: {hidden: 256}}\n");
  Config c = load_config(schema, {"--config", recipe, "--model.extra.name", "MAE-6", "--model.extra.gate.hidden=128",
                                  "--model.extra.sites.enc", "[1, 2]"});
  const YAML::Node m = c.get("model.extra");
  CHECK(m["type"].as<std::string>() == "mae");  // the recipe's other entries stay
  CHECK(m["name"].as<std::string>() == "MAE-6");
  CHECK(m["gate"]["hidden"].as<int>() == 128);
  CHECK(m["sites"]["enc"].as<std::vector<int>>() == std::vector<int>{1, 2});
  CHECK(c.source("model.extra") == "command line");
  Config fresh = load_config(schema, {"--model.extra.type", "moe"});  // no map yet: one is made
  CHECK(fresh.get("model.extra")["type"].as<std::string>() == "moe");
  CHECK_THAT(error_of([&] {
               load_config(schema, {"--model.name.x", "1"});
             }),
             Catch::Contains("unknown key 'model.name.x'"));
  CHECK_THAT(error_of([&] { load_config(schema, {"--model.extra.name"}); }), Catch::Contains("needs a value"));
}

TEST_CASE("config: includes resolve relative to the including file, recursively", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  dir.write("base/common.yml", "seed: 3\ntrain:\n  lr: 0.5\n  max_tokens: 100\n");
  dir.write("base/base.yml", "include: common.yml\ntrain:\n  max_tokens: 200\n");
  auto top = dir.write("exp/run.yml", "include: [../base/base.yml]\ntrain.lr: 0.25\n");
  Config c(schema);
  c.merge_file(top);
  CHECK(c.get_int("seed") == 3);                // from common.yml, two levels down
  CHECK(c.get_int("train.max_tokens") == 200);  // base.yml overrides common.yml
  CHECK(c.get_float("train.lr") == 0.25);       // the including file overrides both
  CHECK_THAT(c.source("seed"), Catch::Contains("common.yml"));
  auto missing = dir.write("missing.yml", "include: nowhere.yml\n");
  CHECK_THAT(error_of([&] { Config(schema).merge_file(missing); }),
             Catch::Contains("cannot open recipe") && Catch::Contains("nowhere.yml") &&
                 Catch::Contains("included from") && Catch::Contains("missing.yml"));
}

TEST_CASE("config: include cycles are detected", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  auto a = dir.write("a.yml", "include: b.yml\nseed: 1\n");
  dir.write("b.yml", "include: c.yml\n");
  dir.write("c.yml", "include: a.yml\n");
  auto self = dir.write("self.yml", "include: ./self.yml\n");
  std::string e = error_of([&] { Config(schema).merge_file(a); });
  CHECK_THAT(e, Catch::Contains("include cycle") && Catch::Contains("a.yml -> ") && Catch::Contains("b.yml") &&
                    Catch::Contains("c.yml"));
  CHECK_THAT(error_of([&] { Config(schema).merge_file(self); }), Catch::Contains("include cycle"));
  // Including the same file twice without a cycle (a diamond) is fine.
  dir.write("d/leaf.yml", "seed: 5\n");
  dir.write("d/l.yml", "include: leaf.yml\n");
  dir.write("d/r.yml", "include: leaf.yml\n");
  auto top = dir.write("d/top.yml", "include: [l.yml, r.yml]\n");
  Config c(schema);
  c.merge_file(top);
  CHECK(c.get_int("seed") == 5);
}

TEST_CASE("config: unknown keys name the file and suggest the nearest key", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  auto r = dir.write("recipe.yml", "seed: 1\ntrain:\n  max_token: 8000\n");
  std::string e = error_of([&] { Config(schema).merge_file(r); });
  CHECK_THAT(e, Catch::Contains("unknown key 'train.max_token' in ") && Catch::Contains("recipe.yml") &&
                    Catch::Contains("line 3") && Catch::Contains("did you mean 'train.max_tokens'?"));
  CHECK_THAT(error_of([&] {
               load_config(schema, {"--train.max_token", "5"});
             }),
             Catch::Contains("unknown key 'train.max_token' on the command line; did you mean 'train.max_tokens'?"));
  CHECK_THAT(error_of([&] { load_config(schema, {"--completely.different=1"}); }),
             Catch::Contains("unknown key 'completely.different'") && !Catch::Contains("did you mean"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("model: 5\n", "inline.yml"); }),
             Catch::Contains("'model'") && Catch::Contains("is a section"));
  CHECK(schema.nearest("modle.name") == "model.name");
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("config: type errors name key, value and expected type", "[config]") {
  Schema schema = make_schema();
  CHECK_THAT(error_of([&] { Config(schema).merge_text("train:\n  max_tokens: lots\n", "r.yml"); }),
             Catch::Contains("train.max_tokens") && Catch::Contains("'lots'") && Catch::Contains("expected int") &&
                 Catch::Contains("r.yml line 2"));
  CHECK_THAT(error_of([&] {
               load_config(schema, {"--train.lr", "fast"});
             }),
             Catch::Contains("train.lr") && Catch::Contains("'fast'") && Catch::Contains("expected float") &&
                 Catch::Contains("command line"));
  CHECK_THAT(error_of([&] { load_config(schema, {"--train.shuffle=maybe"}); }), Catch::Contains("expected bool"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("data:\n  files: a.txt\n", "r.yml"); }),
             Catch::Contains("data.files") && Catch::Contains("expected list of strings"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("model:\n  layers: [1, two]\n", "r.yml"); }),
             Catch::Contains("'two'") && Catch::Contains("list of ints"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("train.max_tokens: 1.5\n", "r.yml"); }),
             Catch::Contains("'1.5'"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("model.extra: 3\n", "r.yml"); }),
             Catch::Contains("expected map"));
  CHECK_THAT(error_of([&] { Config(schema).get_int("train.lr"); }), Catch::Contains("is a float, not a int"));
  CHECK_THAT(error_of([&] { load_config(schema, {"--seed"}); }), Catch::Contains("needs a value"));
}

TEST_CASE("config: malformed YAML names the file, line and column", "[config]") {
  Schema schema = make_schema();
  TempDir dir;
  auto r = dir.write("broken.yml", "seed: 1\ntrain:\n  lr: [0.1, 0.2\n  max_tokens: 5\n");
  std::string e = error_of([&] { Config(schema).merge_file(r); });
  CHECK_THAT(e, Catch::Contains("malformed YAML in ") && Catch::Contains("broken.yml") && Catch::Contains("line "));
  auto r2 = dir.write("tabs.yml", "seed: 1\nmodel:\n  name: a\n name: b\n");
  CHECK_THAT(error_of([&] { Config(schema).merge_file(r2); }), Catch::Contains("line 4"));
  CHECK_THAT(error_of([&] { Config(schema).merge_text("- a\n- b\n", "list.yml"); }),
             Catch::Contains("top level must be a map"));
  Config empty(schema);
  empty.merge_text("", "empty.yml");  // an empty recipe changes nothing
  CHECK(empty.get_int("seed") == 1);
}

TEST_CASE("config: dump-config round trip", "[config]") {
  Schema schema = make_schema();
  Config c = load_config(schema, {"--train.lr=0.1", "--model.name=123", "--train.note=true", "--data.files=a b,c",
                                  "--model.extra={k: v, n: 2}", "--train.betas=[0.5, 1e-9]"});
  std::string text = dump_config(c);
  CHECK_THAT(text, Catch::Contains("lr: 0.1\n") && Catch::Contains("max_tokens: 4096") &&
                       Catch::Contains("name: \"123\"") && Catch::Contains("note: \"true\""));
  Config back(schema);
  back.merge_text(text, "dump.yml");
  for (const auto& [key, e] : c.entries()) {
    INFO(key << "\n" << text);
    YAML::Emitter a, b;
    a << e.value;
    b << back.get(key);
    CHECK(std::string(a.c_str()) == std::string(b.c_str()));
  }
  CHECK(back.get_string("model.name") == "123");
  CHECK(back.get_string("train.note") == "true");
  CHECK(back.get_floats("train.betas") == std::vector<double>{0.5, 1e-9});
  CHECK(back.get_strings("data.files") == std::vector<std::string>{"a b", "c"});
  CHECK(back.get("model.extra")["n"].as<int>() == 2);
  CHECK(dump_config(back) == text);
  // A map left at its default ({}) dumps as the loaded {} does (found by tests/fuzz/recipe.cpp).
  Config defaults(schema), reloaded(schema);
  reloaded.merge_text(dump_config(defaults), "dump.yml");
  CHECK(dump_config(reloaded) == dump_config(defaults));
  YAML::Node tree = c.to_yaml();
  CHECK(tree["train"]["max_tokens"].as<int64_t>() == 4096);
  CHECK(tree["seed"].as<int64_t>() == 1);
  CHECK(format_float(0.1) == "0.1");
  CHECK(format_float(3.0) == "3.0");
  CHECK(format_float(1e-9) == "1e-09");
}

TEST_CASE("config: help text grouped by section; schema registration errors", "[config]") {
  Schema schema = make_schema();
  std::string help = schema.help_text();
  CHECK_THAT(help, Catch::Contains("[general]\n  --seed int (default: 1)\n      random seed") &&
                       Catch::Contains("[train]") && Catch::Contains("--train.max_tokens int (default: 4096)") &&
                       Catch::Contains("--train.lr float (default: 0.001)") &&
                       Catch::Contains("--data.files list of strings (default: [a.txt, b.txt])") &&
                       Catch::Contains("--dump-config"));
  CHECK(help.find("[data]") < help.find("[model]"));
  CHECK(help.find("[model]") < help.find("[train]"));
  CHECK_THAT(error_of([&] { schema.add_int("seed", 2, "again"); }), Catch::Contains("registered twice"));
  CHECK_THAT(error_of([&] { schema.add_int("train", 2, "x"); }), Catch::Contains("section"));
  CHECK_THAT(error_of([&] { schema.add_int("seed.x", 2, "x"); }), Catch::Contains("nest under key 'seed'"));
  CHECK_THAT(error_of([&] { schema.add("bad.default", ValueType::Int, YAML::Node("x"), "x"); }),
             Catch::Contains("expected int"));
  SchemaRegistrar reg([](Schema& s) {
    if (!s.find("test.registered")) s.add_bool("test.registered", false, "registered statically");
  });
  CHECK(global_schema().find("test.registered") != nullptr);
}
