// moe-train's options: the registered keys and their defaults, a recipe plus command-line overrides
// read into TrainOptions, the model section handed to create_model() unchanged, --dump-config text
// that loads back to the same options, and errors naming the key.
#include "training/train_options.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "config/recipe_args.h"
#include "models/model.h"
#include "models/model_registry.h"
#include "models/transformer_model.h"
#include "training/trainer.h"

using namespace moe;

namespace {
const char* kRecipe = R"(
run_dir: runs/x
data:
  train: {src: a.en, tgt: a.de}
  valid: {src: v.en, tgt: v.de}
  vocab: {src: vocab.spm, tgt: vocab.spm, size: 500}
model:
  d_model: 64
  heads: 4
  pre_norm: true
  ffn: {type: dense}
train:
  max_updates: 100
  dtype: bf16
  optimizer: adamw
  betas: [0.9, 0.98]
  lr: 1.0e-3
  schedule: cosine
  warmup_updates: 10
)";

config::Config load(const config::Schema& schema, const std::string& text, const std::vector<std::string>& args = {}) {
  config::Config c = config::load_config(schema, args);
  c.merge_text(text, "recipe.yml");
  return c;
}
}  // namespace

TEST_CASE("train options: defaults, recipe values and the model section", "[training][options]") {
  config::Schema schema;
  register_train_keys(schema);
  CHECK(schema.find("train.max_tokens"));
  CHECK(schema.find("model.d_model"));
  CHECK(schema.find("data.vocab.size"));
  CHECK(schema.find("valid.metric"));
  const TrainOptions o = TrainOptions::from_config(load(schema, kRecipe));
  CHECK(o.run_dir == "runs/x");
  CHECK(o.data.train_src == "a.en");
  CHECK(o.data.valid_tgt == "v.de");
  CHECK(o.data.src_vocab == o.data.tgt_vocab);
  CHECK(o.data.vocab_size == 500);
  CHECK(o.dtype == DType::bf16);
  CHECK(o.optimizer == Optimizer::Kind::adamw);
  CHECK(o.optim.beta2 == Approx(0.98));
  CHECK(o.schedule.kind == LrScheduleKind::cosine);
  CHECK(o.schedule.max_updates == 100);
  CHECK(o.schedule.lr == Approx(1e-3));
  CHECK(o.max_tokens == 4096);  // default
  CHECK(o.update_freq == 1);
  CHECK(o.label_smoothing == Approx(0.1f));
  CHECK_FALSE(o.model["attention"]);  // an empty variant map is left out
  YAML::Node m = YAML::Clone(o.model);
  m["src_vocab"] = 100;
  m["tgt_vocab"] = 100;
  auto model = create_model(m);
  const TransformerConfig& c = dynamic_cast<const TransformerModel&>(*model).net().config();
  CHECK(c.d_model == 64);
  CHECK(c.heads == 4);
  CHECK(c.pre_norm);
  CHECK(c.ffn_dim == TransformerConfig().ffn_dim);
  CHECK(site_type(c.ffn, "dense") == "dense");
}

TEST_CASE("train options: command-line overrides and --dump-config round trip", "[training][options]") {
  config::Schema schema;
  register_train_keys(schema);
  config::Config c = load(schema, kRecipe);
  c.set_text("train.update_freq", "4");
  c.set_text("model.dropout", "0.3");
  settle_model_keys(c);  // as moe-train does before --dump-config: the dump lists the type's defaults
  const TrainOptions o = TrainOptions::from_config(c);
  CHECK(o.update_freq == 4);
  CHECK(o.model["dropout"].as<double>() == Approx(0.3));
  config::Config again(schema);
  again.merge_text(config::dump_config(c), "dump.yml");
  const TrainOptions o2 = TrainOptions::from_config(again);
  CHECK(o2.update_freq == 4);
  CHECK(YAML::Dump(o2.model) == YAML::Dump(o.model));
  CHECK(o2.schedule.kind == LrScheduleKind::cosine);
}

TEST_CASE("train options: a model type's own defaults for keys it shares with the Transformer",
          "[training][options][seq2seq]") {
  // lstm_seq2seq shares enc_layers, dec_layers, dropout, ... with the Transformer, whose defaults the
  // schema holds; unset, they take lstm_seq2seq's (3 and 2 layers), in the settled dump as in the model.
  config::Schema schema;
  register_train_keys(schema);
  config::Config c = load(schema,
                          "data: {train: {src: a.en, tgt: a.fr}, vocab: {src: v.spm, tgt: v.spm}}\n"
                          "model: {type: lstm_seq2seq, d_model: 64}\ntrain: {max_updates: 10}\n");
  CHECK_FALSE(TrainOptions::from_config(c).model["enc_layers"]);
  settle_model_keys(c);
  CHECK(c.get_int("model.enc_layers") == 3);
  CHECK(c.get_int("model.dec_layers") == 2);
  config::Config again(schema);
  again.merge_text(config::dump_config(c), "dump.yml");
  const YAML::Node m = TrainOptions::from_config(again).model;
  CHECK(m["enc_layers"].as<int>() == 3);
  CHECK(m["d_model"].as<int>() == 64);
  CHECK_FALSE(m["heads"]);  // a Transformer key at its default is not passed on
}

TEST_CASE("train options: errors name the key", "[training][options]") {
  config::Schema schema;
  register_train_keys(schema);
  auto with = [&](const std::string& key, const std::string& value) {
    config::Config c = load(schema, kRecipe);
    c.set_text(key, value);
    return TrainOptions::from_config(c);
  };
  CHECK_THROWS_WITH(with("train.dtype", "f64"), Catch::Contains("train.dtype") && Catch::Contains("f64"));
  CHECK(with("train.dtype", "auto").dtype_auto);
  TrainOptions bf16_on_cpu = with("train.dtype", "bf16");  // explicit bf16 on the CPU stays an error
  bf16_on_cpu.device = "cpu";
  CHECK_THROWS_WITH(Trainer(bf16_on_cpu), Catch::Contains("train.dtype bf16 needs a GPU") && Catch::Contains("auto"));
  CHECK_THROWS_WITH(with("train.update_freq", "0"), Catch::Contains("train.update_freq"));
  CHECK_THROWS_WITH(with("data.train.src", ""), Catch::Contains("data.train.src"));
  CHECK_THROWS_WITH(with("data.valid.tgt", ""), Catch::Contains("data.valid.src"));
  CHECK_THROWS_WITH(with("valid.metric", "chrf"), Catch::Contains("valid.metric"));
  CHECK_THROWS_WITH(with("train.betas", "0.9"), Catch::Contains("train.betas"));
  CHECK_THROWS_WITH(with("data.vocab.type", "char"), Catch::Contains("data.vocab.type"));
  CHECK_THROWS_WITH(with("train.label_smoothing", "1.5"), Catch::Contains("train.label_smoothing"));
  // guided alignment: its options without the alignments, or a bad value
  CHECK_THROWS_WITH(with("train.guided_alignment.weight", "0.5"),
                    Catch::Contains("train.guided_alignment.weight is set (command line)") &&
                        Catch::Contains("data.train.alignment is empty"));
  CHECK_THROWS_WITH(with("train.guided_alignment.cost", "mse"), Catch::Contains("train.guided_alignment.cost"));
  CHECK_THROWS_WITH(with("train.guided_alignment.cost", "l1"),
                    Catch::Contains("train.guided_alignment.cost") && Catch::Contains("l1"));
  CHECK_THROWS_WITH(with("train.guided_alignment.weight", "-1"), Catch::Contains("train.guided_alignment.weight"));
  const TrainOptions guided = with("data.train.alignment", "a.align");
  CHECK(guided.data.train_alignment == "a.align");
  CHECK(guided.guided_alignment.weight == 0.1);
  CHECK(guided.guided_alignment.cost == GuidedAlignmentCost::ce);
  // data weighting: the type without the file, or a type that is not one
  CHECK_THROWS_WITH(
      with("data.train.weighting", "word"),
      Catch::Contains("data.train.weighting is set (command line)") && Catch::Contains("data.train.weights is empty"));
  CHECK_THROWS_WITH(with("data.train.weighting", "token"),
                    Catch::Contains("data.train.weighting") && Catch::Contains("token"));
  const TrainOptions weighted = with("data.train.weights", "train.w");
  CHECK(weighted.data.train_weights == "train.w");
  CHECK(weighted.data.weighting == data::WeightingType::sentence);
  // subword sampling: a bad value, nbest without alpha, and the keys it excludes
  CHECK_THROWS_WITH(with("data.train.subword_alpha", "-0.1"), Catch::Contains("data.train.subword_alpha"));
  CHECK_THROWS_WITH(
      with("data.train.subword_nbest", "8"),
      Catch::Contains("data.train.subword_nbest is set (command line)") && Catch::Contains("subword_alpha is 0"));
  auto sampled = [&](const std::string& key, const std::string& value) {
    config::Config c = load(schema, kRecipe);
    c.set_text("data.train.subword_alpha", "0.1");
    c.set_text(key, value);
    return TrainOptions::from_config(c);
  };
  CHECK(sampled("data.train.subword_nbest", "64").data.subword.nbest == 64);
  CHECK(sampled("data.train.subword_nbest", "-1").data.subword.alpha == 0.1);
  CHECK_THROWS_WITH(sampled("data.train.subword_nbest", "1"), Catch::Contains("-1 (all) or >= 2"));
  CHECK_THROWS_WITH(sampled("data.train.alignment", "a.align"),
                    Catch::Contains("data.train.subword_alpha and data.train.alignment exclude each other"));
  CHECK(sampled("data.train.weights", "train.w").data.train_weights == "train.w");  // sentence weights: fine
  config::Config none = load(schema, kRecipe);
  none.set_text("train.max_updates", "0");
  CHECK_THROWS_WITH(TrainOptions::from_config(none), Catch::Contains("train.max_epochs"));
  CHECK_THROWS_WITH(load(schema, "train: {max_updatess: 3}"), Catch::Contains("train.max_updates"));
}
