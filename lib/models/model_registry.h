// The model registry: each architecture registers under its model.type a factory, the kind of task it
// trains on and its key table, from which follow the recipe keys moe-train declares (model.*), the keys
// the type reads, its defaults (the completed section a dumped configuration shows) and building the
// model from a checkpoint's stored architecture. A new model type adds its own files and one line in
// models/builtin_models.cpp (docs/CONTRIBUTING.md walks through it).
// Covered by tests/models/model_registry_test.cpp and tests/training/train_options_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/keys.h"
#include "models/model.h"

namespace moe {

/// What a model type trains on: parallel text, a token stream, or masked blocks of one.
MOE_NAMED_ENUM(ModelKind, translation, language_model, masked_lm)

struct ModelType {
  std::string name;  // model.type
  ModelKind kind = ModelKind::translation;
  std::function<std::unique_ptr<Model>(const YAML::Node& model)> create;
  /// The section with every key this type reads at its value (its defaults where the node sets none).
  std::function<YAML::Node(const YAML::Node& model)> complete;
  /// Declares model.<key> for every key this type reads (a key another type declared first keeps its
  /// declaration: shared keys have one type and default in the schema).
  std::function<void(config::Schema& schema)> declare;
  /// The keys this type reads (without "model.").
  std::vector<std::string> keys;
};

/// A ModelType from a config struct with keys(), from_yaml() and to_yaml() and a model built from it.
template <class Config, class M>
ModelType model_type(std::string name, ModelKind kind) {
  ModelType t;
  t.name = std::move(name);
  t.kind = kind;
  t.create = [](const YAML::Node& m) -> std::unique_ptr<Model> { return std::make_unique<M>(Config::from_yaml(m)); };
  t.complete = [](const YAML::Node& m) { return Config::from_yaml(m).to_yaml(); };
  t.declare = [](config::Schema& schema) {
    const Config defaults;
    for (const auto& k : Config::keys().keys()) {
      const std::string full = "model." + k.name;
      if (!k.declared || schema.find(full)) continue;
      YAML::Node v = k.write(defaults);
      if (k.type == config::ValueType::Map && v.IsNull()) v = YAML::Node(YAML::NodeType::Map);
      schema.add(full, k.type, v, k.help);
    }
  };
  t.keys = Config::keys().names();
  return t;
}

class ModelRegistry {
 public:
  /// The registry with the built-in model types (builtin_models.cpp).
  static ModelRegistry& instance();
  void add(ModelType type);
  /// The type called `name`; an unknown name is an error listing the known ones.
  const ModelType& at(const std::string& name) const;
  const ModelType* find(const std::string& name) const;
  const std::vector<ModelType>& types() const { return types_; }

 private:
  std::vector<ModelType> types_;
};

/// Builds the model described by `model` (a recipe's model section with vocabulary sizes and ids filled
/// in, or a checkpoint's stored architecture); model.type defaults to transformer.
std::unique_ptr<Model> create_model(const YAML::Node& model);
/// model["type"], or "transformer".
std::string model_type_of(const YAML::Node& model);

/// The built-in model types, one registration line each (builtin_models.cpp).
void register_builtin_models(ModelRegistry& registry);

}  // namespace moe
