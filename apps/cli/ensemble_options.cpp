// ensemble_options.h implementation. Covered by tests/translator/ensemble_test.cpp.
#include "cli/ensemble_options.h"

#include <CLI/CLI.hpp>

namespace moe::cli {

void add_ensemble_options(CLI::App& app, std::vector<std::string>& models, std::vector<double>& weights,
                          const std::string& what) {
  app.add_option("-m,--model", models,
                 "checkpoint (.safetensors)" + what +
                     "; repeat it for an ensemble (the weighted average of the models' log-probabilities at every "
                     "step; same vocabularies)")
      ->required()
      ->take_all();
  app.add_option("--weights", weights, "ensemble weights, one per -m, normalised to sum 1 (default: equal)")
      ->delimiter(',');
}

}  // namespace moe::cli
