// moe-train's language-model options: an LM recipe read into TrainOptions (task from model.type, data
// keys, the model section with only the recipe's keys so the model's own defaults apply), errors that
// name the missing or misplaced key (translation keys in LM mode and vice versa, vocabulary kinds,
// masked-LM keys, data weighting of a masked LM), unknown keys with the nearest known one, --dump-config of an LM
// recipe loading back to the same model, and every LM recipe in recipes/ loading as moe-train options whose model
// builds.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "config/recipe_args.h"
#include "models/model.h"
#include "models/model_registry.h"
#include "models/transformer_lm.h"
#include "training/train_options.h"

using namespace moe;

namespace {
const char* kLmRecipe = R"(
run_dir: runs/lm
data:
  train: {text: train.txt}
  valid: {text: valid.txt}
  vocab: {path: vocab.words, type: word, min_count: 2}
  tokens_per_sample: 128
model:
  type: transformer_lm
  d_model: 64
  heads: 4
  layers: 2
  tie_embeddings: false
train:
  max_tokens: 1024
  max_updates: 10
valid:
  context: 128
  stride: 64
)";

config::Config load(const config::Schema& schema, const std::string& text) {
  config::Config c = config::load_config(schema, std::vector<std::string>{});
  c.merge_text(text, "recipe.yml");
  return c;
}

/// The LM recipe with one key set from command-line text.
TrainOptions with(const config::Schema& schema, const std::string& key, const std::string& value,
                  const std::string& recipe = kLmRecipe) {
  config::Config c = load(schema, recipe);
  c.set_text(key, value);
  return TrainOptions::from_config(c);
}

std::unique_ptr<Model> build(const YAML::Node& section) {
  YAML::Node m = YAML::Clone(section);
  m["vocab"] = 300000;  // filled from the vocabulary by the trainer
  return create_model(m);
}
}  // namespace

TEST_CASE("lm options: an LM recipe", "[training][options][lm]") {
  config::Schema schema;
  register_train_keys(schema);
  const TrainOptions o = TrainOptions::from_config(load(schema, kLmRecipe));
  CHECK(o.task == TrainTaskKind::language_model);
  CHECK(o.data.train_text == "train.txt");
  CHECK(o.data.valid_text == "valid.txt");
  CHECK(o.data.vocab_path == "vocab.words");
  CHECK(o.data.vocab_type == VocabType::word);
  CHECK(o.data.vocab_min_count == 2);
  CHECK(o.data.vocab_max_words == 0);
  CHECK(o.data.tokens_per_sample == 128);
  CHECK(o.valid.context == 128);
  CHECK(o.valid.stride == 64);
  CHECK(o.data.train_src.empty());
  // Only the recipe's model keys: the Transformer LM's own defaults (pre-norm, sinusoidal) apply.
  CHECK_FALSE(o.model["enc_layers"]);
  CHECK_FALSE(o.model["pre_norm"]);
  auto model = build(o.model);
  const auto& c = dynamic_cast<const TransformerLm&>(*model).config();
  CHECK(c.d_model == 64);
  CHECK(c.layers == 2);
  CHECK(c.pre_norm);
  CHECK_FALSE(c.tie_embeddings);
  CHECK(c.positions == Positions::sinusoidal);
  // A word list of the N most frequent words when data.vocab.size is set.
  CHECK(with(schema, "data.vocab.size", "5000").data.vocab_max_words == 5000);
  CHECK(with(schema, "model.type", "transformer_mlm").task == TrainTaskKind::masked_lm);
  const TrainOptions mlm = with(schema, "model.type", "transformer_mlm");
  CHECK(mlm.data.mlm.mask_prob == Approx(0.15));
  CHECK(mlm.data.mlm.replace_mask == Approx(0.8));
  CHECK(mlm.data.mlm.replace_random == Approx(0.1));
  CHECK(mlm.data.mlm.mask_id == -1);
}

TEST_CASE("lm options: errors name the key", "[training][options][lm]") {
  config::Schema schema;
  register_train_keys(schema);
  CHECK_THROWS_WITH(with(schema, "data.train.text", ""),
                    Catch::Contains("data.train.text is required") && Catch::Contains("transformer_lm"));
  CHECK_THROWS_WITH(with(schema, "data.vocab.path", ""), Catch::Contains("data.vocab.path is required"));
  CHECK_THROWS_WITH(with(schema, "data.train.src", "a.en"),
                    Catch::Contains("data.train.src is a translation key") && Catch::Contains("data.train.text"));
  CHECK_THROWS_WITH(with(schema, "data.vocab.tgt", "v.spm"), Catch::Contains("data.vocab.tgt"));
  CHECK_THROWS_WITH(with(schema, "data.train.alignment", "a.align"),
                    Catch::Contains("data.train.alignment is a translation key"));
  // Data weighting: a causal LM's lines are weighted (data/lm_token_weights.h), a masked LM's are not.
  CHECK(with(schema, "data.train.weights", "train.w").data.train_weights == "train.w");
  config::Config weighted = load(schema, kLmRecipe);
  weighted.set_text("data.train.weights", "train.w");
  weighted.set_text("model.type", "transformer_mlm");
  CHECK_THROWS_WITH(TrainOptions::from_config(weighted),
                    Catch::Contains("data.train.weights") && Catch::Contains("transformer_mlm"));
  CHECK_THROWS_WITH(with(schema, "data.train.weighting", "word"),
                    Catch::Contains("data.train.weighting is set") && Catch::Contains("data.train.weights is empty"));
  CHECK_THROWS_WITH(with(schema, "data.train.subword_alpha", "0.1"),
                    Catch::Contains("data.train.subword_alpha is a translation key"));
  CHECK_THROWS_WITH(with(schema, "data.vocab.path", "vocab.spm"),
                    Catch::Contains("data.vocab.type word") && Catch::Contains("vocab.spm"));
  CHECK_THROWS_WITH(with(schema, "data.vocab.type", "unigram"), Catch::Contains(".spm or .model"));
  CHECK_THROWS_WITH(with(schema, "data.mlm.mask_prob", "0.2"),
                    Catch::Contains("data.mlm.mask_prob") && Catch::Contains("transformer_mlm"));
  CHECK_THROWS_WITH(with(schema, "valid.metric", "bleu"), Catch::Contains("translation model"));
  CHECK_THROWS_WITH(with(schema, "data.tokens_per_sample", "0"), Catch::Contains("data.tokens_per_sample"));
  CHECK_THROWS_WITH(with(schema, "valid.stride", "-1"), Catch::Contains("valid.stride"));
  CHECK_THROWS_WITH(with(schema, "data.vocab.min_count", "0"), Catch::Contains("data.vocab.min_count"));
  CHECK_NOTHROW(with(schema, "model.type", "transformer_mlm"));
  config::Config mlm = load(schema, kLmRecipe);
  mlm.set_text("model.type", "transformer_mlm");
  mlm.set_text("data.mlm.replace_random", "0.5");  // 0.8 + 0.5 > 1
  CHECK_THROWS_WITH(TrainOptions::from_config(mlm), Catch::Contains("data.mlm.replace_random"));
  // An importance-sampled softmax has no label smoothing: refused before any data is read.
  config::Config sampled = load(schema, kLmRecipe);
  sampled.set_text("model.type", "lstm_lm");
  sampled.set_text("model.sampled_softmax", "64");
  sampled.set_text("train.label_smoothing", "0");
  CHECK_NOTHROW(TrainOptions::from_config(sampled));
  sampled.set_text("train.label_smoothing", "0.1");
  CHECK_THROWS_WITH(TrainOptions::from_config(sampled), Catch::Contains("train.label_smoothing 0"));
  // A model key of another model type is rejected by the model, naming it.
  CHECK_THROWS_WITH(build(with(schema, "model.enc_layers", "3").model), Catch::Contains("model.enc_layers"));
  // Unknown keys suggest the nearest known one.
  CHECK_THROWS_WITH(load(schema, "data: {train: {txt: a.txt}}"), Catch::Contains("did you mean 'data.train.text'"));
  CHECK_THROWS_WITH(load(schema, "valid: {contxt: 64}"), Catch::Contains("did you mean 'valid.context'"));
  CHECK_THROWS_WITH(load(schema, "data: {tokens_per_sampel: 64}"),
                    Catch::Contains("did you mean 'data.tokens_per_sample'"));
}

TEST_CASE("lm options: translation recipes refuse language-model keys", "[training][options][lm]") {
  config::Schema schema;
  register_train_keys(schema);
  const std::string mt =
      "data: {train: {src: a.en, tgt: a.de}, vocab: {src: v.spm, tgt: v.spm}}\ntrain: {max_updates: 10}\n";
  CHECK(TrainOptions::from_config(load(schema, mt)).task == TrainTaskKind::translation);
  CHECK_THROWS_WITH(with(schema, "data.train.text", "x.txt", mt),
                    Catch::Contains("data.train.text is a language-model key"));
  CHECK_THROWS_WITH(with(schema, "valid.context", "64", mt), Catch::Contains("valid.context"));
  CHECK_THROWS_WITH(with(schema, "data.mlm.mask_id", "5", mt), Catch::Contains("data.mlm.mask_id"));
  CHECK_THROWS_WITH(with(schema, "data.train.src", "", mt), Catch::Contains("data.train.src"));
}

TEST_CASE("lm options: --dump-config of an LM recipe loads back to the same model", "[training][options][lm]") {
  config::Schema schema;
  register_train_keys(schema);
  config::Config c = load(schema, kLmRecipe);
  const std::string unsettled = YAML::Dump(build(TrainOptions::from_config(c).model)->config_yaml());
  settle_model_keys(c);
  CHECK(c.get_bool("model.pre_norm"));  // the Transformer LM's default, not the translation default
  CHECK(c.get_string("model.tie_embeddings") == "false");
  const TrainOptions o = TrainOptions::from_config(c);
  CHECK(YAML::Dump(build(o.model)->config_yaml()) == unsettled);
  config::Config again(schema);
  again.merge_text(config::dump_config(c), "dump.yml");
  const TrainOptions o2 = TrainOptions::from_config(again);
  CHECK(YAML::Dump(o2.model) == YAML::Dump(o.model));
  CHECK(YAML::Dump(build(o2.model)->config_yaml()) == unsettled);
  CHECK(o2.data.vocab_path == "vocab.words");
}

TEST_CASE("lm options: every LM recipe loads as moe-train options", "[training][options][lm][recipes]") {
  config::Schema schema;
  register_train_keys(schema);
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MOE_SOURCE_DIR) + "/recipes")) {
    if (entry.path().extension() != ".yml") continue;
    INFO(entry.path().filename().string());
    config::Config c(schema);
    c.merge_file(entry.path().string());
    if (task_of_model_type(c.get_string("model.type")) == TrainTaskKind::translation) continue;
    if (c.get_string("data.train.text").empty()) {  // ci-tiny-lm.yml: data paths on the command line
      c.set_text("data.train.text", "train.txt");
      c.set_text("data.vocab.path", "vocab.words");
    }
    const TrainOptions o = TrainOptions::from_config(c);
    CHECK_FALSE(o.data.vocab_path.empty());
    CHECK_NOTHROW(build(o.model));
    ++seen;
  }
  CHECK(seen >= 20);  // WikiText-103 (sample, adaptive, 6 MoA masked LMs), 12 1B-word LSTMs, ci-tiny-lm
}
