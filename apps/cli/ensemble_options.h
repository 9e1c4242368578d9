// -m, --weights, --lm and --lm-weight, one definition for moe-translate and moe-score pairs: -m once per checkpoint
// (two or more decode or score an ensemble, models/ensemble_decoder.h), --weights w1,w2,... (one per -m,
// normalised to sum 1) and a language model fused in with its weight (shallow fusion; each needs the other);
// checked by translator/translation_models.h when the models load.
// Covered by tests/translator/ensemble_test.cpp and tests/translator/lm_fusion_test.cpp.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace moe {
struct LmFusion;
}  // namespace moe

namespace moe::cli {

/// Adds a required, repeatable -m/--model bound to `models` ("checkpoint (.safetensors)" + `what`),
/// --weights bound to `weights`, and --lm / --lm-weight bound to `lm`.
void add_ensemble_options(CLI::App& app, std::vector<std::string>& models, std::vector<double>& weights, LmFusion& lm,
                          const std::string& what);

}  // namespace moe::cli
