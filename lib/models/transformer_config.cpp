// transformer_config.h implementation.
#include "models/transformer_config.h"

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

TransformerConfig TransformerConfig::from_yaml(const YAML::Node& node) {
  static const std::set<std::string> known = {"type",           "src_vocab",        "tgt_vocab",  "pad_id",
                                              "bos_id",         "eos_id",           "d_model",    "ffn_dim",
                                              "heads",          "enc_layers",       "dec_layers", "pre_norm",
                                              "tie_embeddings", "scale_embeddings", "dropout",    "activation_dropout",
                                              "activation",     "max_positions",    "attention",  "ffn"};
  TransformerConfig c;
  if (!node || node.IsNull()) return c;
  MOE_CHECK(node.IsMap(), "model: expected a mapping of model options");
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    MOE_CHECK(known.count(k), "unknown model option 'model.", k, "' for a transformer");
  }
  read(node, "src_vocab", c.src_vocab);
  read(node, "tgt_vocab", c.tgt_vocab);
  read(node, "pad_id", c.pad_id);
  read(node, "bos_id", c.bos_id);
  read(node, "eos_id", c.eos_id);
  read(node, "d_model", c.d_model);
  read(node, "ffn_dim", c.ffn_dim);
  read(node, "heads", c.heads);
  read(node, "enc_layers", c.enc_layers);
  read(node, "dec_layers", c.dec_layers);
  read(node, "pre_norm", c.pre_norm);
  read(node, "tie_embeddings", c.tie_embeddings);
  read(node, "scale_embeddings", c.scale_embeddings);
  read(node, "dropout", c.dropout);
  read(node, "activation_dropout", c.activation_dropout);
  read(node, "activation", c.activation);
  read(node, "max_positions", c.max_positions);
  if (node["attention"]) c.attention = YAML::Clone(node["attention"]);
  MaeOptions::pin_gate_input(c.attention);  // the stored architecture names its MAE gate inputs
  if (node["ffn"]) c.ffn = YAML::Clone(node["ffn"]);
  MOE_CHECK(c.tie_embeddings == "none" || c.tie_embeddings == "decoder" || c.tie_embeddings == "all",
            "model.tie_embeddings: '", c.tie_embeddings, "' is not one of none, decoder, all");
  MOE_CHECK(c.d_model % c.heads == 0, "model.d_model (", c.d_model, ") must be divisible by model.heads (", c.heads,
            ")");
  return c;
}

YAML::Node TransformerConfig::to_yaml() const {
  YAML::Node n;
  n["type"] = "transformer";
  n["src_vocab"] = src_vocab;
  n["tgt_vocab"] = tgt_vocab;
  n["pad_id"] = pad_id;
  n["bos_id"] = bos_id;
  n["eos_id"] = eos_id;
  n["d_model"] = d_model;
  n["ffn_dim"] = ffn_dim;
  n["heads"] = heads;
  n["enc_layers"] = enc_layers;
  n["dec_layers"] = dec_layers;
  n["pre_norm"] = pre_norm;
  n["tie_embeddings"] = tie_embeddings;
  n["scale_embeddings"] = scale_embeddings;
  n["dropout"] = dropout;
  n["activation_dropout"] = activation_dropout;
  n["activation"] = activation;
  n["max_positions"] = max_positions;
  if (attention) n["attention"] = attention;
  if (ffn) n["ffn"] = ffn;
  return n;
}

std::string TransformerConfig::attention_type() const {
  return attention && attention["type"] ? attention["type"].as<std::string>() : "mha";
}

std::string TransformerConfig::ffn_type() const { return ffn && ffn["type"] ? ffn["type"].as<std::string>() : "dense"; }

}  // namespace moe
