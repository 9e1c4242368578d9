// LstmLmConfig (lstm_lm.h): reading and writing the model section.
#include <set>

#include "common/error.h"
#include "models/lstm_lm.h"

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

LstmLmConfig LstmLmConfig::from_yaml(const YAML::Node& node) {
  static const std::set<std::string> known = {"type",
                                              "vocab",
                                              "pad_id",
                                              "bos_id",
                                              "eos_id",
                                              "embed_dim",
                                              "hidden",
                                              "projection",
                                              "layers",
                                              "dropout",
                                              "residual",
                                              "moe_after",
                                              "moe",
                                              "tie_embeddings",
                                              "adaptive_softmax_cutoffs",
                                              "adaptive_softmax_factor",
                                              "adaptive_softmax_dropout"};
  LstmLmConfig c;
  if (!node || node.IsNull()) return c;
  MOE_CHECK(node.IsMap(), "model: expected a mapping of model options");
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    MOE_CHECK(known.count(k), "unknown model option 'model.", k, "' for an lstm_lm");
  }
  read(node, "vocab", c.vocab);
  read(node, "pad_id", c.pad_id);
  read(node, "bos_id", c.bos_id);
  read(node, "eos_id", c.eos_id);
  read(node, "embed_dim", c.embed_dim);
  read(node, "hidden", c.hidden);
  read(node, "projection", c.projection);
  read(node, "layers", c.layers);
  read(node, "dropout", c.dropout);
  read(node, "residual", c.residual);
  read(node, "moe_after", c.moe_after);
  read(node, "tie_embeddings", c.tie_embeddings);
  read(node, "adaptive_softmax_cutoffs", c.adaptive_softmax_cutoffs);
  read(node, "adaptive_softmax_factor", c.adaptive_softmax_factor);
  read(node, "adaptive_softmax_dropout", c.adaptive_softmax_dropout);
  if (node["moe"]) c.moe = YAML::Clone(node["moe"]);
  MOE_CHECK(c.embed_dim > 0 && c.hidden > 0 && c.projection >= 0 && c.layers >= 1, "model: lstm_lm sizes embed_dim ",
            c.embed_dim, ", hidden ", c.hidden, ", projection ", c.projection, ", layers ", c.layers,
            " must be positive");
  for (int l : c.moe_after)
    MOE_CHECK(l >= 0 && l < c.layers, "model.moe_after: layer ", l, " is not in [0, ", c.layers, ")");
  MOE_CHECK(!c.tie_embeddings || c.out_dim() == c.embed_dim, "model.tie_embeddings: the top layer has ", c.out_dim(),
            " features, the embedding ", c.embed_dim);
  MOE_CHECK(!c.tie_embeddings || c.adaptive_softmax_cutoffs.empty(),
            "model.tie_embeddings: an lstm_lm ties only a full softmax (adaptive_softmax_cutoffs is set)");
  return c;
}

YAML::Node LstmLmConfig::to_yaml() const {
  YAML::Node n;
  n["type"] = "lstm_lm";
  n["vocab"] = vocab;
  n["pad_id"] = pad_id;
  n["bos_id"] = bos_id;
  n["eos_id"] = eos_id;
  n["embed_dim"] = embed_dim;
  n["hidden"] = hidden;
  n["projection"] = projection;
  n["layers"] = layers;
  n["dropout"] = dropout;
  n["residual"] = residual;
  n["moe_after"] = moe_after;
  if (moe) n["moe"] = moe;
  n["tie_embeddings"] = tie_embeddings;
  n["adaptive_softmax_cutoffs"] = adaptive_softmax_cutoffs;
  n["adaptive_softmax_factor"] = adaptive_softmax_factor;
  n["adaptive_softmax_dropout"] = adaptive_softmax_dropout;
  return n;
}

}  // namespace moe
