// ensemble_options.h implementation. Covered by tests/translator/ensemble_test.cpp.
#include "cli/ensemble_options.h"

#include <CLI/CLI.hpp>

#include "translator/translation_models.h"

namespace moe::cli {

void add_ensemble_options(CLI::App& app, std::vector<std::string>& models, std::vector<double>& weights, LmFusion& lm,
                          const std::string& what) {
  app.add_option("-m,--model", models,
                 "checkpoint (.safetensors)" + what +
                     "; repeat it for an ensemble (the weighted average of the models' log-probabilities at every "
                     "step; same vocabularies)")
      ->required()
      ->take_all();
  app.add_option("--weights", weights, "ensemble weights, one per -m, normalised to sum 1 (default: equal)")
      ->delimiter(',');
  CLI::Option* path = app.add_option("--lm", lm.path,
                                     "a causal language model's checkpoint (transformer_lm, lstm_lm) over the target "
                                     "vocabulary, fused in: every step adds --lm-weight x its log-probabilities to the "
                                     "translation models' (shallow fusion, fairseq's --lm-path)");
  CLI::Option* weight =
      app.add_option("--lm-weight", lm.weight, "the fused language model's weight (positive; fairseq's --lm-weight)");
  path->needs(weight);
  weight->needs(path);
}

}  // namespace moe::cli
