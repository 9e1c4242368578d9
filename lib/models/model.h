// Model: what the trainer, the translator and the scorers need from any architecture. Translation
// models implement loss(Batch) and expose their EncoderDecoder; language models implement
// lm_loss(LmBatch) and, when causal, expose their Decoder (models/decoder.h). A model's architecture is
// a YAML node (config_yaml) stored in each checkpoint; the model registry (model_registry.h) rebuilds
// the model from it. Covered by tests/layers/transformer_test.cpp and the models' tests.
#pragma once
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "layers/builder.h"
#include "layers/sites.h"
#include "models/decoder.h"

namespace moe {

class Model {
 public:
  virtual ~Model() = default;
  /// model.type: "transformer", "transformer_lm", "lstm_lm", ...
  virtual std::string type() const = 0;
  /// The complete architecture (including vocabulary sizes and special ids), as stored in checkpoints.
  virtual YAML::Node config_yaml() const = 0;
  virtual bool is_language_model() const = 0;
  /// Translation: summed (label-smoothed) cross-entropy over the target tokens of `batch` (f32 scalar).
  virtual Expr loss(const Builder& b, const data::Batch& batch, float label_smoothing) const;
  /// Language modelling: summed cross-entropy over the scored targets of `batch`, each times its weight where
  /// batch.weights is defined (f32 scalar).
  virtual Expr lm_loss(const Builder& b, const data::LmBatch& batch, float label_smoothing) const;
  /// The incremental decoder (beam search), or nullptr (a bidirectional masked LM has none).
  virtual const Decoder* decoder() const { return nullptr; }
  /// The encoder-decoder behind a translation model (forced scoring, analysis), or nullptr.
  virtual const EncoderDecoder* encoder_decoder() const { return nullptr; }
  /// The sites whose teacher-forced graphs let a position see later target tokens, which incremental
  /// decoding never does (e.g. "decoder_self" of an MAE model with gate_input paper); empty for most.
  virtual std::vector<std::string> future_sites() const { return {}; }
  /// The gated site types of the architecture, for messages: "attention mha, ffn dense" (the
  /// Transformers' sites); the LSTM models name their MoE layers instead.
  virtual std::string site_types() const;
  /// Every site with routed experts (MoE layers, MoA attention), one per layer, as the sites describe
  /// themselves (layers/sites.h): what the dry run counts and the causality checks read. The model
  /// checked them when it was built (check_routing).
  virtual std::vector<ModelRoutedSite> routed_sites() const { return {}; }
};

/// "" when model.future_sites() is empty, else a warning (without the program's prefix) naming the
/// sites and saying that `what` (e.g. "training and validation losses") see future target tokens.
std::string future_warning(const Model& model, const std::string& what);

}  // namespace moe
