// transformer_lm_config.h implementation.
#include "models/transformer_lm_config.h"

#include <set>

#include "common/error.h"
#include "layers/mae.h"

namespace moe {

namespace {
template <class T>
void read(const YAML::Node& node, const char* key, T& out) {
  if (!node[key]) return;
  try {
    out = node[key].as<T>();
  } catch (const YAML::Exception&) {
    MOE_FAIL("model.", key, ": cannot read '", YAML::Dump(node[key]), "' as the expected type");
  }
}
}  // namespace

TransformerLmConfig TransformerLmConfig::from_yaml(const YAML::Node& node) {
  static const std::set<std::string> known = {"type",
                                              "vocab",
                                              "pad_id",
                                              "bos_id",
                                              "eos_id",
                                              "d_model",
                                              "ffn_dim",
                                              "heads",
                                              "layers",
                                              "pre_norm",
                                              "final_norm",
                                              "positions",
                                              "tie_embeddings",
                                              "scale_embeddings",
                                              "dropout",
                                              "activation_dropout",
                                              "activation",
                                              "max_positions",
                                              "adaptive_input_cutoffs",
                                              "adaptive_softmax_cutoffs",
                                              "adaptive_input_factor",
                                              "adaptive_softmax_factor",
                                              "adaptive_softmax_dropout",
                                              "tie_adaptive_proj",
                                              "attention",
                                              "ffn"};
  TransformerLmConfig c;
  if (!node || node.IsNull()) return c;
  MOE_CHECK(node.IsMap(), "model: expected a mapping of model options");
  if (node["type"]) c.causal = node["type"].as<std::string>() != "transformer_mlm";
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    MOE_CHECK(known.count(k), "unknown model option 'model.", k, "' for a ",
              c.causal ? "transformer_lm" : "transformer_mlm");
  }
  read(node, "vocab", c.vocab);
  read(node, "pad_id", c.pad_id);
  read(node, "bos_id", c.bos_id);
  read(node, "eos_id", c.eos_id);
  read(node, "d_model", c.d_model);
  read(node, "ffn_dim", c.ffn_dim);
  read(node, "heads", c.heads);
  read(node, "layers", c.layers);
  read(node, "pre_norm", c.pre_norm);
  c.final_norm = c.pre_norm;
  read(node, "final_norm", c.final_norm);
  read(node, "positions", c.positions);
  read(node, "tie_embeddings", c.tie_embeddings);
  read(node, "scale_embeddings", c.scale_embeddings);
  read(node, "dropout", c.dropout);
  read(node, "activation_dropout", c.activation_dropout);
  read(node, "activation", c.activation);
  read(node, "max_positions", c.max_positions);
  read(node, "adaptive_input_cutoffs", c.adaptive_input_cutoffs);
  read(node, "adaptive_softmax_cutoffs", c.adaptive_softmax_cutoffs);
  read(node, "adaptive_input_factor", c.adaptive_input_factor);
  read(node, "adaptive_softmax_factor", c.adaptive_softmax_factor);
  read(node, "adaptive_softmax_dropout", c.adaptive_softmax_dropout);
  read(node, "tie_adaptive_proj", c.tie_adaptive_proj);
  if (node["attention"]) c.attention = YAML::Clone(node["attention"]);
  MaeOptions::pin_gate_input(c.attention);  // the stored architecture names its MAE gate inputs
  if (node["ffn"]) c.ffn = YAML::Clone(node["ffn"]);
  MOE_CHECK(c.positions == "sinusoidal" || c.positions == "learned" || c.positions == "none", "model.positions: '",
            c.positions, "' is not one of sinusoidal, learned, none");
  MOE_CHECK(c.heads > 0 && c.d_model % c.heads == 0, "model.d_model (", c.d_model,
            ") must be divisible by model.heads (", c.heads, ")");
  MOE_CHECK(c.layers >= 0, "model.layers: ", c.layers, " is negative");
  if (c.tie_embeddings && (c.adaptive_input() || c.adaptive_softmax()))
    MOE_CHECK(
        c.adaptive_input_cutoffs == c.adaptive_softmax_cutoffs && c.adaptive_input_factor == c.adaptive_softmax_factor,
        "model.tie_embeddings with adaptive input/softmax needs equal cutoffs and factors on both sides");
  return c;
}

YAML::Node TransformerLmConfig::to_yaml() const {
  YAML::Node n;
  n["type"] = causal ? "transformer_lm" : "transformer_mlm";
  n["vocab"] = vocab;
  n["pad_id"] = pad_id;
  n["bos_id"] = bos_id;
  n["eos_id"] = eos_id;
  n["d_model"] = d_model;
  n["ffn_dim"] = ffn_dim;
  n["heads"] = heads;
  n["layers"] = layers;
  n["pre_norm"] = pre_norm;
  n["final_norm"] = final_norm;
  n["positions"] = positions;
  n["tie_embeddings"] = tie_embeddings;
  n["scale_embeddings"] = scale_embeddings;
  n["dropout"] = dropout;
  n["activation_dropout"] = activation_dropout;
  n["activation"] = activation;
  n["max_positions"] = max_positions;
  n["adaptive_input_cutoffs"] = adaptive_input_cutoffs;
  n["adaptive_softmax_cutoffs"] = adaptive_softmax_cutoffs;
  n["adaptive_input_factor"] = adaptive_input_factor;
  n["adaptive_softmax_factor"] = adaptive_softmax_factor;
  n["adaptive_softmax_dropout"] = adaptive_softmax_dropout;
  n["tie_adaptive_proj"] = tie_adaptive_proj;
  if (attention) n["attention"] = attention;
  if (ffn) n["ffn"] = ffn;
  return n;
}

}  // namespace moe
