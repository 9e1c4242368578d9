// The decoding options declared once (models/decoding_options.h, cli/decoding_options.h): the four entry
// points that decode (moe-translate, moe-score, moe-serve with its requests, moe-train's valid.* and
// eval.* keys) give the same defaults, parsed and as --help shows them; bad values are errors naming the
// flag or the key (--sampling a switch); the checks across keys name the keys as each entry point spells them; the
// automatic batch.
#include "models/decoding_options.h"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <limits>

#include "cli/decoding_options.h"
#include "config/recipe_args.h"
#include "moe-score/score_program.h"
#include "moe-serve/serve_cli.h"
#include "moe-translate/translate_cli.h"
#include "serving/request.h"
#include "training/train_options.h"
#include "translator/translator.h"

using namespace moe;

namespace {
/// The default each decoding key has in the shared declaration, as --help and the schema show it.
std::string shared_default(const std::string& key) {
  return YAML::Dump(decoding_keys().find(key)->write(DecodingOptions{}));
}

/// The decoding flags `app` has: each must show the shared default. Returns how many it has.
int check_shown_defaults(const CLI::App& app, const std::string& what) {
  int found = 0;
  for (const std::string& key : decoding_keys().names()) {
    const CLI::Option* opt = app.get_option_no_throw(cli::flag_naming()(key));
    if (!opt) continue;
    ++found;
    INFO(what << " " << opt->get_name());
    CHECK(opt->get_default_str() == shared_default(key));
  }
  return found;
}

config::Config recipe(const config::Schema& schema, const std::vector<std::string>& args = {}) {
  config::Config c = config::load_config(schema, args);
  c.merge_text("data: {train: {src: a.en, tgt: a.de}, vocab: {src: v.spm, tgt: v.spm}}\ntrain: {max_updates: 1}\n",
               "recipe.yml");
  return c;
}
}  // namespace

TEST_CASE("the four entry points give the same decoding defaults", "[translator][options]") {
  const DecodingOptions shared;
  CHECK(shared.search.beam == 5);
  CHECK(shared.search.penalty == LengthPenalty::fairseq);
  CHECK(shared.device.str() == "auto");
  CHECK(shared.dtype == ComputeDType::f32);

  // moe-translate: every key.
  TranslateCliOptions t;
  CLI::App translate("moe-translate");
  add_translate_options(translate, t);
  translate.parse("-m a.safetensors", false);
  CHECK(t.decoding == shared);
  CHECK(check_shown_defaults(translate, "moe-translate") == static_cast<int>(decoding_keys().names().size()));

  // moe-serve: every key, the search keys as the defaults of requests.
  ServeOptions s;
  CLI::App serve("moe-serve");
  add_serve_options(serve, s);
  serve.parse("-m a.safetensors", false);
  CHECK(s.decoding == shared);
  CHECK(check_shown_defaults(serve, "moe-serve") == static_cast<int>(decoding_keys().names().size()));
  const auto request = serving::parse_translate_request(R"({"text": ["a"]})", {}, s.decoding.search);
  CHECK(static_cast<const SearchOptions&>(request.search) == shared.search);
  const auto plain = serving::parse_translate_request(R"({"text": ["a"]})", {});
  CHECK(static_cast<const SearchOptions&>(plain.search) == shared.search);

  // moe-score: the keys of each model command.
  for (const char* cmd : {"ppl", "pairs", "experts"}) {
    CLI::App sub(cmd);
    score_table_entry(cmd).setup(sub);
    CHECK(check_shown_defaults(sub, std::string("moe-score ") + cmd) >= 2);  // --device, --dtype at least
  }

  // moe-train: valid.* and eval.*, read from a recipe that sets none of them, and in the schema (--help).
  config::Schema schema;
  register_train_keys(schema);
  const TrainOptions o = TrainOptions::from_config(recipe(schema));
  CHECK(o.valid.decoding == shared);
  CHECK(o.eval.decoding == shared);
  for (const std::string section : {"valid", "eval"})
    for (const std::string& key : decoding_keys().names())
      if (const config::KeyInfo* info = schema.find(section + "." + key)) {
        INFO(info->name);
        CHECK(YAML::Dump(info->default_value) == shared_default(key));
      }
  CHECK(schema.find("valid.length_penalty"));
  CHECK_FALSE(schema.find("valid.device"));  // the training's own train.device applies
}

TEST_CASE("decoding values are parsed once and errors name the flag or the key", "[translator][options]") {
  const auto parse = [](const std::string& args) {
    TranslateCliOptions t;
    CLI::App app("moe-translate");
    add_translate_options(app, t);
    app.parse("-m a.safetensors " + args, false);
    return t.decoding;
  };
  const DecodingOptions d = parse("--beam 4 --length-penalty gnmt --device cpu --dtype bf16 --max-len-a 1.5");
  CHECK(d.search.beam == 4);
  CHECK(d.search.penalty == LengthPenalty::gnmt);
  CHECK(d.device == DeviceChoice(Device::cpu()));
  CHECK(d.dtype == ComputeDType::bf16);
  CHECK(d.search.max_len_a == 1.5);
  CHECK(parse("--device cuda:1").device.resolve() == Device::cuda(1));
  CHECK_THROWS_WITH(parse("--beam 0"), Catch::Contains("--beam must be > 0"));
  CHECK_THROWS_WITH(parse("--beam many"), Catch::Contains("--beam"));
  CHECK_THROWS_WITH(parse("--length-penalty average"),
                    Catch::Contains("--length-penalty") && Catch::Contains("'average'") && Catch::Contains("gnmt"));
  CHECK_THROWS_WITH(parse("--device tpu"), Catch::Contains("--device") && Catch::Contains("tpu"));
  CHECK_THROWS_WITH(parse("--dtype f16"), Catch::Contains("--dtype") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(parse("--max-tokens -1"), Catch::Contains("--max-tokens"));
  // --sampling is a switch; its numbers are checked where they are parsed
  const SearchOptions sampling =
      parse("--sampling --sampling-topk 10 --sampling-topp 0.9 --temperature 0.7 --seed 5").search;
  CHECK(sampling.sampling);
  CHECK(sampling.sampling_topk == 10);
  CHECK(sampling.sampling_topp == 0.9);
  CHECK(sampling.temperature == 0.7);
  CHECK(sampling.seed == 5);
  CHECK_FALSE(parse("").search.sampling);
  CHECK(parse("--unkpen 2.5").search.unkpen == 2.5);
  CHECK(parse("--unkpen inf").search.unkpen == std::numeric_limits<double>::infinity());
  CHECK(parse("--unkpen=-1").search.unkpen == -1.0);
  CHECK_THROWS_WITH(parse("--unkpen=-.inf"), Catch::Contains("--unkpen must be a number or inf"));
  CHECK_THROWS_WITH(parse("--unkpen often"), Catch::Contains("--unkpen"));
  CHECK_THROWS_WITH(parse("--sampling --sampling-topp 1.5"), Catch::Contains("--sampling-topp must be in (0, 1]"));
  CHECK_THROWS_WITH(parse("--sampling --temperature 0"), Catch::Contains("--temperature must be > 0"));
  CHECK_THROWS_WITH(parse("--sampling --sampling-topk -1"), Catch::Contains("--sampling-topk must be >= 0"));

  config::Schema schema;
  register_train_keys(schema);
  const auto train = [&](const std::string& key, const std::string& value) {
    return TrainOptions::from_config(recipe(schema, {"--" + key, value}));
  };
  CHECK(train("valid.beam", "3").valid.decoding.search.beam == 3);
  CHECK(train("valid.length_penalty", "gnmt").valid.decoding.search.penalty == LengthPenalty::gnmt);
  CHECK(train("eval.lenpen", "0.6").eval.decoding.search.lenpen == 0.6);
  CHECK_THROWS_WITH(train("valid.beam", "0"), Catch::Contains("valid.beam must be > 0"));
  CHECK_THROWS_WITH(train("valid.length_penalty", "average"), Catch::Contains("valid.length_penalty"));
}

TEST_CASE("the checks across decoding keys name them as the entry point does", "[translator][options]") {
  DecodingOptions o;
  o.search.n_best = 6;
  CHECK_THROWS_WITH(check_decoding_options(o, cli::flag_naming()),
                    Catch::Contains("--n-best 6") && Catch::Contains("--beam = 5"));
  CHECK_THROWS_WITH(check_decoding_options(o, {.section = "valid"}), Catch::Contains("valid.n_best 6"));
  o.search.n_best = 5;
  check_decoding_options(o, cli::flag_naming());
  o.search.temperature = 0.8;  // a sampling number without --sampling is a mistake, not silently unused
  CHECK_THROWS_WITH(check_decoding_options(o, cli::flag_naming()),
                    Catch::Contains("--temperature applies to sampling only: add --sampling"));
  o.search.sampling = true;
  check_decoding_options(o, cli::flag_naming());
  o.device = Device::cpu();
  o.dtype = ComputeDType::bf16;
  CHECK_THROWS_WITH(decoding_placement(o, cli::flag_naming()), Catch::Contains("--dtype bf16 needs a GPU"));
  o.dtype = ComputeDType::f32;
  const Placement p = decoding_placement(o, cli::flag_naming());
  CHECK(p.device == Device::cpu());
  CHECK(p.dtype == DType::f32);
}

TEST_CASE("the automatic batch counts 4096 source tokens, at most 16384 hypotheses' tokens", "[translator][options]") {
  DecodingOptions o;
  CHECK(o.max_tokens == 0);  // auto
  CHECK(scoring_batch_tokens(o) == 4096);
  CHECK(translation_batch_tokens(o) == 16384);  // beam 5: 3,276 source tokens
  o.search.beam = 1;
  CHECK(translation_batch_tokens(o) == 4096);
  CHECK(scoring_batch_tokens(o) == 4096);
  o.search.beam = 2;
  CHECK(translation_batch_tokens(o) == 8192);
  o.search.beam = 12;
  CHECK(translation_batch_tokens(o) == 16384);
  CHECK(translator_options(o).max_tokens == 16384);
  o.max_tokens = 1000;  // the user's budget, as given
  CHECK(translation_batch_tokens(o) == 1000);
  CHECK(scoring_batch_tokens(o) == 1000);
  CHECK(translator_options(o).max_tokens == 1000);
}
