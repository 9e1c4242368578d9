// -m and --weights, one definition for moe-translate and moe-score pairs: -m once per checkpoint (two
// or more decode or score an ensemble, models/ensemble_decoder.h) and --weights w1,w2,... (one per
// -m, normalised to sum 1; checked by translator/translation_models.h when the models load).
// Covered by tests/translator/ensemble_test.cpp.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace moe::cli {

/// Adds a required, repeatable -m/--model bound to `models` ("checkpoint (.safetensors)" + `what`)
/// and --weights bound to `weights`.
void add_ensemble_options(CLI::App& app, std::vector<std::string>& models, std::vector<double>& weights,
                          const std::string& what);

}  // namespace moe::cli
