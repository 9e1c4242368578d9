// moe-score: corpus metrics on text files (`moe-score bleu -r REF [-i HYP]`, `chrf`; sacreBLEU 2.x
// compatible, lib/metrics/) and model scores (`ppl -m LM`, `pairs -m MODEL --src S --tgt T`, `sentences -m LM -i
// TEXT`, `experts -m MODEL -i TEXT`); the subcommands are the table of score_program.cpp.
// Covered by tests/metrics/score_cli_test.cpp and tests/translator/scoring_test.cpp.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/program.h"
#include "moe-score/score_program.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("moe"));  // stdout is for results: warnings go to stderr
  return moe::cli::run_program("moe-score", argc, argv, [](int n, char** v) {
    return moe::score_main(std::vector<std::string>(v, v + n), std::cout, std::cerr);
  });
}
