// mae_causality.h implementation. Covered by tests/layers/mae_causality_test.cpp.
#include "models/mae_causality.h"

#include "layers/mae.h"
#include "models/transformer_config.h"
#include "models/transformer_lm_config.h"

namespace moe {

std::vector<std::string> mae_future_roles(const YAML::Node& model_config) {
  const std::string type =
      model_config && model_config["type"] ? model_config["type"].as<std::string>() : "transformer";
  YAML::Node attention;
  int heads = 0;
  std::vector<const char*> causal_roles;
  if (type == "transformer") {
    const TransformerConfig c = TransformerConfig::from_yaml(model_config);
    attention = c.attention;
    heads = c.heads;
    causal_roles = {kDecoderSelf, kDecoderCross};
  } else if (type == "transformer_lm") {
    const TransformerLmConfig c = TransformerLmConfig::from_yaml(model_config);
    attention = c.attention;
    heads = c.heads;
    causal_roles = {kLmSelf};
  }  // transformer_mlm is bidirectional and lstm_lm has no attention: nothing to see ahead of
  std::vector<std::string> out;
  if (!attention || !attention.IsMap() || !attention["type"] || attention["type"].as<std::string>() != "mae")
    return out;
  const MaeOptions o = MaeOptions::from_yaml(attention, heads);
  if (o.gate != "learned") return out;  // UNI-MAE has no gate input at all
  for (const char* role : causal_roles)
    if (o.policy(role) == "full_mean") out.emplace_back(role);
  return out;
}

std::string mae_future_warning(const YAML::Node& model_config, const std::string& what) {
  const std::vector<std::string> roles = mae_future_roles(model_config);
  if (roles.empty()) return "";
  std::string list;
  for (const std::string& r : roles) list += (list.empty() ? "" : ", ") + r;
  return "the MAE gates at " + list + " read full_mean (model.attention.gate_input, e.g. the preset paper): " + what +
         " see future target tokens through them, which incremental decoding never does (it reads the prefix "
         "mean), so they look better than the model that translates; gate_input: leak_free (the default) keeps "
         "these gates causal";
}

}  // namespace moe
