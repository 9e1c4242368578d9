// moe-generate: text continuation with a causal language model (`moe-generate -m lm.safetensors < prompts > out`;
// the command line is generate_cli.h). Covered by tests/translator/generate_cli_test.cpp.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/program.h"
#include "moe-generate/generate_cli.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("moe"));  // stdout is for results: warnings go to stderr
  return moe::cli::run_program("moe-generate", argc, argv, moe::generate_main);
}
