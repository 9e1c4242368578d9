// The architecture of a decoder-only Transformer language model (type "transformer_lm"; its
// bidirectional twin for masked language modelling is type "transformer_mlm"), read from
// the recipe's `model:` section and stored in checkpoints: sizes, pre/post-norm, positions
// (sinusoidal | learned | none), tied input/output embeddings, adaptive input and adaptive softmax
// (Baevski & Auli 2019) and the attention / feed-forward site options (MAE, MoA, MoE variants).
// Covered by tests/models/transformer_lm_test.cpp and tests/training/lm_options_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <vector>

#include "config/keys.h"
#include "layers/basic.h"

namespace moe {

MOE_NAMED_ENUM(Positions, sinusoidal, learned, none)

struct TransformerLmConfig {
  bool causal = true;  // false: type "transformer_mlm", a bidirectional encoder for masked-LM batches
  int64_t vocab = 0;   // filled from the vocabulary
  int pad_id = 0, bos_id = 2, eos_id = 3;
  int64_t d_model = 512, ffn_dim = 2048;
  int heads = 8, layers = 6;
  bool pre_norm = true;
  bool final_norm = true;  // a layer norm after the last pre-norm layer
  Positions positions = Positions::sinusoidal;
  bool tie_embeddings = true;    // output matrix = input embedding (or tied adaptive weights)
  bool scale_embeddings = true;  // multiply embeddings by sqrt(d_model)
  float dropout = 0.1f, activation_dropout = 0.0f;
  float attention_dropout = 0.0f;  // on the attention weights (training)
  Activation activation = Activation::relu;
  int64_t max_positions = 1024;
  // Adaptive input / softmax: empty cutoffs = off. Band i has d_model / factor^i features.
  std::vector<int64_t> adaptive_input_cutoffs, adaptive_softmax_cutoffs;
  double adaptive_input_factor = 4, adaptive_softmax_factor = 4;
  float adaptive_softmax_dropout = 0.f;
  bool tie_adaptive_proj = true;  // tail projections = the adaptive input's projections
  YAML::Node attention;           // {type: mha | mae | moa, ...}
  YAML::Node ffn;                 // {type: dense | moe, ...}

  /// The keys of model types transformer_lm and transformer_mlm.
  static const config::Keys<TransformerLmConfig>& keys();
  /// Reads `node`; unknown keys are an error naming the key.
  static TransformerLmConfig from_yaml(const YAML::Node& node);
  YAML::Node to_yaml() const;
  bool adaptive_input() const { return !adaptive_input_cutoffs.empty(); }
  bool adaptive_softmax() const { return !adaptive_softmax_cutoffs.empty(); }
};

}  // namespace moe
