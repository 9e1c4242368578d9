// Which MAE gates of a model architecture see the future (issue 16). A learned MAE gate whose input
// is full_mean at a causal site (decoder_self and decoder_cross of a transformer, lm_self of a
// transformer_lm) averages the whole target sentence in every teacher-forced graph (training,
// validation, moe-score) but only the prefix in incremental decoding, the one reading the future
// leaves it: teacher-forced losses and scores then use future target tokens, and the gates learn on
// inputs decoding never gives them. gate_input: leak_free, the default, has none such; paper has
// them at the decoder sites of a transformer. moe-train and moe-score warn with mae_future_warning.
// Covered by tests/layers/mae_causality_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace moe {

/// The site roles of `model_config` (Model::config_yaml()) whose gates see the future, in order
/// (decoder_self, decoder_cross; lm_self); empty for models without learned MAE gates.
std::vector<std::string> mae_future_roles(const YAML::Node& model_config);

/// "" when mae_future_roles is empty, else a warning (without the program's prefix) naming the roles
/// and saying that `what` (e.g. "training and validation losses") see future target tokens.
std::string mae_future_warning(const YAML::Node& model_config, const std::string& what);

}  // namespace moe
