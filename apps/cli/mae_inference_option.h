// The --mae-inference option, one definition for moe-translate and moe-score pairs / experts, so that
// the probabilities scored are those of the decoder the user runs: how MAE attention sites weight
// their experts at inference, as BuildContext::experts (layers/build_context.h): mixture (the
// gate-weighted experts, the default) or argmax (only the most-weighted expert, the MAE paper's
// Table 5 analysis). Covered by tests/translator/mae_scoring_test.cpp and translate_cli_test.cpp.
#pragma once
#include <string>

#include "layers/build_context.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace moe::cli {

/// Adds --mae-inference to `app`, bound to `value` (mixture | argmax; other values are parse errors).
CLI::Option* add_mae_inference_option(CLI::App& app, ExpertChoice& value);

/// The expert choice of an inference with --mae-inference `value` (mixture | argmax).
ExpertChoice mae_inference_choice(const std::string& value);

}  // namespace moe::cli
