// The architecture of a Transformer encoder-decoder (and the knobs its mixture-of-experts variants
// add), read from the `model:` section of a recipe through one key table and stored in every
// checkpoint, so translating and scoring need only the checkpoint. Covered by
// tests/layers/transformer_test.cpp and tests/training/train_options_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include "config/keys.h"
#include "layers/basic.h"

namespace moe {

/// none: separate tables; decoder: decoder input = output matrix; all: + source embedding (joint vocabulary).
MOE_NAMED_ENUM(TieEmbeddings, none, decoder, all)

struct TransformerConfig {
  int64_t src_vocab = 0, tgt_vocab = 0;  // filled from the vocabularies
  int pad_id = 0, bos_id = 2, eos_id = 3;
  int64_t d_model = 512, ffn_dim = 2048;
  int heads = 8, enc_layers = 6, dec_layers = 6;
  bool pre_norm = false;  // false: post-norm (Vaswani et al.); true: pre-norm
  TieEmbeddings tie_embeddings = TieEmbeddings::decoder;
  bool scale_embeddings = true;  // multiply embeddings by sqrt(d_model)
  float dropout = 0.1f, activation_dropout = 0.0f;
  float attention_dropout = 0.0f;  // on the attention weights (training)
  Activation activation = Activation::relu;
  int64_t max_positions = 1024;
  YAML::Node attention;  // {type: mha | mae | moa, ...variant options} (layers/sites.h)
  YAML::Node ffn;        // {type: dense | moe, ...variant options}

  /// The keys of model type transformer.
  static const config::Keys<TransformerConfig>& keys();
  /// Reads `node` (the model section); unknown keys are an error naming the key.
  static TransformerConfig from_yaml(const YAML::Node& node);
  YAML::Node to_yaml() const;
};

}  // namespace moe
