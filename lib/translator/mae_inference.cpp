// mae_inference.h implementation. Covered by tests/translator/mae_scoring_test.cpp and translate_cli_test.cpp.
#include "translator/mae_inference.h"

#include <CLI/CLI.hpp>

namespace moe {

CLI::Option* add_mae_inference_option(CLI::App& app, std::string& value) {
  return app
      .add_option("--mae-inference", value,
                  "MAE models: mixture (the gate-weighted experts) or argmax (only the most-weighted expert, the "
                  "MAE paper's Table 5 analysis)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mixture", "argmax"}));
}

ExpertChoice mae_inference_choice(const std::string& value) {
  const ExpertChoice c = parse_enum<ExpertChoice>(value, "--mae-inference");
  MOE_CHECK(c != ExpertChoice::sample, "--mae-inference: '", value, "' is not one of mixture, argmax");
  return c;
}

}  // namespace moe
