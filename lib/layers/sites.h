// The attention and feed-forward "sites" of a Transformer layer, chosen by type from the recipe:
// attention: mha (standard), and the mixture-of-experts variants registered in sites.cpp (moa, mae);
// ffn: dense, and the sparsely-gated mixture of experts. A variant receives its options node.
// Covered by tests/layers/transformer_test.cpp and the variants' own tests.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "layers/attention_layer.h"

namespace moe {

struct AttentionSiteSpec {
  int64_t dim = 0;
  int heads = 0;
  YAML::Node options;  // model.attention (type and variant options)
  std::string role;    // encoder_self | decoder_self | decoder_cross | lm_self (per-site MAE gate inputs);
                       // empty: from the input (not self: decoder_cross; causal: decoder_self; else encoder_self)
};

struct FfnSiteSpec {
  int64_t dim = 0, hidden = 0;
  std::string activation = "relu";
  float activation_dropout = 0;
  YAML::Node options;  // model.ffn
};

/// options["type"], or `fallback` when the node or the key is absent.
std::string site_type(const YAML::Node& options, const char* fallback);

Expr attention_site(const Builder& b, const AttentionInput& in, const AttentionSiteSpec& spec);
Expr ffn_site(const Builder& b, const Expr& x, const FfnSiteSpec& spec);

}  // namespace moe
