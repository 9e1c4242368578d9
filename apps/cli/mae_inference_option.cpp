// mae_inference_option.h implementation. Covered by tests/translator/mae_scoring_test.cpp and translate_cli_test.cpp.
#include "cli/mae_inference_option.h"

#include "cli/enum_option.h"

namespace moe::cli {

CLI::Option* add_mae_inference_option(CLI::App& app, ExpertChoice& value) {
  return add_enum_option(
      app, "--mae-inference", value,
      "MAE models: mixture (the gate-weighted experts) or argmax (only the most-weighted expert, the "
      "MAE paper's Table 5 analysis)",
      {ExpertChoice::mixture, ExpertChoice::argmax});
}

ExpertChoice mae_inference_choice(const std::string& value) {
  const ExpertChoice c = parse_enum<ExpertChoice>(value, "--mae-inference");
  MOE_CHECK(c != ExpertChoice::sample, "--mae-inference: '", value, "' is not one of mixture, argmax");
  return c;
}

}  // namespace moe::cli
