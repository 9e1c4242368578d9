// Model: what the trainer, the translator and the scorer need from any architecture.
// Translation models (encoder-decoder) implement loss(Batch) and the decoding interface of
// Transformer; language models implement lm_loss(LmBatch). A model's architecture is a YAML node
// (config_yaml) stored in each checkpoint; create_model() rebuilds the model from it.
// Covered by tests/layers/transformer_test.cpp and the models' tests.
#pragma once
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

#include "data/batch.h"
#include "layers/builder.h"

namespace moe {

class Transformer;

class Model {
 public:
  virtual ~Model() = default;
  /// "transformer", "transformer_lm", "lstm_lm", ...
  virtual std::string type() const = 0;
  /// The complete architecture (including vocabulary sizes and special ids), as stored in checkpoints.
  virtual YAML::Node config_yaml() const = 0;
  virtual bool is_language_model() const = 0;
  /// Translation: summed (label-smoothed) cross-entropy over the target tokens of `batch` (f32 scalar).
  virtual Expr loss(const Builder& b, const data::Batch& batch, float label_smoothing) const;
  /// Language modelling: summed cross-entropy over the scored targets of `batch` (f32 scalar).
  virtual Expr lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const;
  /// The encoder-decoder behind a translation model (for beam search), or nullptr.
  virtual const Transformer* seq2seq() const { return nullptr; }
};

/// Builds the model described by `model` (the recipe's model section, vocabulary sizes and ids filled in).
/// An unknown model.type is an error listing the known ones.
std::unique_ptr<Model> create_model(const YAML::Node& model);

}  // namespace moe
