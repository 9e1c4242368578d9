// The language-model recipes (recipes/wikitext103-*.yml, recipes/1b-word-lstm*.yml): every model
// section builds through create_model, and the 1B-word baselines have the paper's parameter counts
// without embedding and softmax (Shazeer et al. 2017 Table 7: LSTM-2048-512 9.4M, 4xLSTM-512 8.4M).
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "models/lstm_lm.h"
#include "models/model_registry.h"

using namespace moe;

namespace {
YAML::Node model_section(const std::string& recipe) {
  YAML::Node root = YAML::LoadFile(std::string(MOE_SOURCE_DIR) + "/recipes/" + recipe);
  YAML::Node m = YAML::Clone(root["model"]);
  m["vocab"] = 200000;  // filled from the vocabulary by the trainer
  return m;
}

/// Parameters of the recurrent layers only (names starting with "lstm").
int64_t lstm_parameters(const YAML::Node& section) {
  YAML::Node m = YAML::Clone(section);
  m["vocab"] = 16;
  m["adaptive_softmax_cutoffs"] = std::vector<int64_t>{};
  auto model = create_model(m);
  ParameterStore store(Device::cpu(), 1);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  dynamic_cast<const LstmLm&>(*model).log_probs(Builder(g), Tensor::from_vector(std::vector<int32_t>{5}, Shape{1, 1}));
  int64_t n = 0;
  for (const auto& e : store.entries())
    if (e.name.rfind("lstm", 0) == 0) n += e.shape.numel();
  return n;
}
}  // namespace

TEST_CASE("lm recipes: model sections build", "[models][recipes]") {
  for (const char* r : {"wikitext103-sample-lm.yml", "wikitext103-adaptive-lm.yml", "1b-word-lstm-2048-512.yml",
                        "1b-word-lstm-4x512.yml"}) {
    INFO(r);
    auto model = create_model(model_section(r));
    CHECK(model->is_language_model());
  }
  // Every other recipe with a language-model section (e.g. the 1B-word MoE recipes) parses too.
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MOE_SOURCE_DIR) + "/recipes")) {
    if (entry.path().extension() != ".yml") continue;
    const YAML::Node root = YAML::LoadFile(entry.path().string());
    if (!root["model"] || !root["model"]["type"]) continue;
    const std::string type = root["model"]["type"].as<std::string>();
    if (type != "transformer_lm" && type != "transformer_mlm" && type != "lstm_lm") continue;
    INFO(entry.path().filename().string());
    CHECK_NOTHROW(create_model(model_section(entry.path().filename().string())));
    ++seen;
  }
  CHECK(seen >= 4);
}

TEST_CASE("lm recipes: 1B-word baselines match the paper's sizes", "[models][recipes]") {
  const int64_t big = lstm_parameters(model_section("1b-word-lstm-2048-512.yml"));
  const int64_t deep = lstm_parameters(model_section("1b-word-lstm-4x512.yml"));
  CHECK(big == 512 * 8192 + 8192 + 512 * 8192 + 2048 * 512);  // 9.44M
  CHECK(deep == 4 * (2 * 512 * 2048 + 2048));                 // 8.40M
}
