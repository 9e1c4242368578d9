// sites.h implementation: the table of attention and feed-forward variants.
#include "layers/sites.h"

#include "layers/basic.h"
#include "layers/moa.h"

namespace moe {

namespace {
std::string type_of(const YAML::Node& options, const char* fallback) {
  return options && options["type"] ? options["type"].as<std::string>() : fallback;
}
}  // namespace

Expr attention_site(const Builder& b, const AttentionInput& in, const AttentionSiteSpec& spec) {
  const std::string type = type_of(spec.options, "mha");
  if (type == "mha") return multi_head_attention(b, in, spec.dim, spec.heads);
  if (type == "moa") return moa_attention_layer(b, in, spec.dim, MoaOptions::from_yaml(spec.options, spec.heads));
  MOE_FAIL("model.attention.type: unknown attention type '", type, "' (known: mha)");
}

Expr ffn_site(const Builder& b, const Expr& x, const FfnSiteSpec& spec) {
  const std::string type = type_of(spec.options, "dense");
  if (type == "dense") return feed_forward(b, x, spec.dim, spec.hidden, spec.activation, spec.activation_dropout);
  MOE_FAIL("model.ffn.type: unknown feed-forward type '", type, "' (known: dense)");
}

}  // namespace moe
