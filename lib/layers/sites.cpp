// sites.h implementation: the table of attention and feed-forward variants.
#include "layers/sites.h"

#include "layers/basic.h"
#include "layers/mae.h"
#include "layers/moa.h"
#include "layers/moe_ffn.h"

namespace moe {

std::string site_type(const YAML::Node& options, const char* fallback) {
  return options && options["type"] ? options["type"].as<std::string>() : fallback;
}

Expr attention_site(const Builder& b, const AttentionInput& in, const AttentionSiteSpec& spec) {
  const std::string type = site_type(spec.options, "mha");
  if (type == "mha") return multi_head_attention(b, in, spec.dim, spec.heads);
  if (type == "moa") return moa_attention_layer(b, in, spec.dim, MoaOptions::from_yaml(spec.options, spec.heads));
  if (type == "mae") {
    const std::string role = !spec.role.empty()   ? spec.role
                             : !in.self_attention ? kDecoderCross
                             : in.causal          ? kDecoderSelf
                                                  : kEncoderSelf;
    return mae_attention_layer(b, in, spec.dim, MaeOptions::from_yaml(spec.options, spec.heads), role);
  }
  MOE_FAIL("model.attention.type: unknown attention type '", type, "' (known: mha, moa, mae)");
}

Expr ffn_site(const Builder& b, const Expr& x, const FfnSiteSpec& spec) {
  const std::string type = site_type(spec.options, "dense");
  if (type == "dense") return feed_forward(b, x, spec.dim, spec.hidden, spec.activation, spec.activation_dropout);
  if (type == "moe") return moe_ffn(b, x, moe_options_from_yaml(spec.options, spec.dim, spec.hidden));
  MOE_FAIL("model.ffn.type: unknown feed-forward type '", type, "' (known: dense, moe)");
}

}  // namespace moe
