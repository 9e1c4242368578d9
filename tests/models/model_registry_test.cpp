// The model registry (models/model_registry.h): the built-in types with their kinds, unknown types
// listing the known ones, the model.* keys each type declares (first declaration wins, ids filled in by
// the trainer are not recipe keys), completing a section with a type's defaults, and a new model type
// plugged in by one registration; each model's site types (Model::site_types).
#include "models/model_registry.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "models/transformer_model.h"

using namespace moe;

TEST_CASE("model registry: built-in types, kinds and errors", "[models][registry]") {
  const ModelRegistry& r = ModelRegistry::instance();
  std::vector<std::string> names;
  for (const ModelType& t : r.types()) names.push_back(t.name);
  CHECK(names ==
        std::vector<std::string>{"transformer", "transformer_lm", "transformer_mlm", "lstm_lm", "lstm_seq2seq"});
  CHECK(r.at("transformer").kind == ModelKind::translation);
  CHECK(r.at("lstm_seq2seq").kind == ModelKind::translation);
  CHECK(r.at("lstm_lm").kind == ModelKind::language_model);
  CHECK(r.at("transformer_mlm").kind == ModelKind::masked_lm);
  CHECK_THROWS_WITH(r.at("rnn"), Catch::Contains("unknown model type 'rnn'") && Catch::Contains("lstm_lm"));
  CHECK_THROWS_WITH(
      create_model(YAML::Load("{type: transformer, d_modle: 8}")),
      Catch::Contains("unknown option 'model.d_modle'") && Catch::Contains("did you mean 'model.d_model'"));
  const auto lm = create_model(YAML::Load("{type: transformer_lm, vocab: 10, d_model: 16, heads: 2, layers: 1}"));
  CHECK(lm->type() == "transformer_lm");
  CHECK(lm->decoder());  // causal: it decodes
  CHECK(create_model(YAML::Load("{type: transformer_mlm, vocab: 10, d_model: 16, heads: 2}"))->decoder() == nullptr);
  CHECK(create_model(YAML::Load("{src_vocab: 10, tgt_vocab: 10}"))->encoder_decoder());  // type defaults to transformer
}

TEST_CASE("models: their gated site types, for messages", "[models][registry]") {
  CHECK(create_model(YAML::Load("{src_vocab: 10, tgt_vocab: 10, ffn: {type: moe}}"))->site_types() ==
        "attention mha, ffn moe");
  CHECK(create_model(YAML::Load("{type: lstm_lm, vocab: 10, embed_dim: 8, hidden: 8, layers: 3, moe_after: [0, 2]}"))
            ->site_types() == "moe layers after lstm 0, 2");
  CHECK(create_model(YAML::Load("{type: lstm_lm, vocab: 10, embed_dim: 8, hidden: 8}"))->site_types() ==
        "no moe layers (model.moe_after is empty)");
  CHECK(create_model(YAML::Load("{type: lstm_seq2seq, src_vocab: 10, tgt_vocab: 10, d_model: 8, hidden: 8}"))
            ->site_types() == "moe layers after encoder lstm [1] and decoder lstm [0]");
}

TEST_CASE("model registry: declared keys and completed sections", "[models][registry]") {
  config::Schema schema;
  for (const ModelType& t : ModelRegistry::instance().types()) t.declare(schema);
  CHECK(schema.find("model.d_model")->default_value.as<int>() == 512);
  CHECK(schema.find("model.layers")->default_value.as<int>() == 6);       // transformer_lm's, declared first
  CHECK(schema.find("model.embed_dim")->default_value.as<int>() == 512);  // lstm_lm's own
  CHECK(schema.find("model.tie_embeddings")->default_value.as<std::string>() == "decoder");
  CHECK(schema.find("model.activation")->help.find("relu | gelu") != std::string::npos);
  CHECK_FALSE(schema.find("model.src_vocab"));  // filled in from the vocabularies, not a recipe key
  CHECK_FALSE(schema.find("model.pad_id"));
  const YAML::Node done = ModelRegistry::instance().at("transformer_lm").complete(YAML::Load("{type: transformer_lm}"));
  CHECK(done["pre_norm"].as<bool>());
  CHECK(done["final_norm"].as<bool>());  // follows pre_norm
  CHECK(done["positions"].as<std::string>() == "sinusoidal");
  const auto& keys = ModelRegistry::instance().at("lstm_lm").keys;
  CHECK(std::find(keys.begin(), keys.end(), "moe_after") != keys.end());
}

TEST_CASE("model registry: a new model type plugs in by one registration", "[models][registry]") {
  ModelRegistry r;  // a registry of its own: the process-wide one stays as it is
  register_builtin_models(r);
  ModelType t = model_type<TransformerConfig, TransformerModel>("tiny_transformer", ModelKind::translation);
  r.add(t);
  CHECK(r.at("tiny_transformer").create(YAML::Load("{src_vocab: 5, tgt_vocab: 5}"))->type() == "transformer");
  CHECK_THROWS_WITH(r.add(t), Catch::Contains("registered twice"));
}
