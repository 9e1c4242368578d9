// moe-translate: raw text in, detokenised translations out, with a trained checkpoint
// (`moe-translate -m model.safetensors < in > out`; the command line is translate_cli.h).
// Covered by tests/translator/translate_cli_test.cpp.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/program.h"
#include "moe-translate/translate_cli.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("moe"));  // stdout is for results: warnings go to stderr
  return moe::cli::run_program("moe-translate", argc, argv, moe::translate_main);
}
