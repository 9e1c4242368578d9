// moe-score: corpus metrics on text files. `moe-score bleu -r REF [-i HYP]`, `moe-score chrf ...`
// (sacreBLEU 2.x compatible; see lib/metrics/), and the model-based `moe-score ppl -m LM` and
// `moe-score pairs -m MODEL --src S --tgt T` and `moe-score experts -m MODEL -i TEXT` (gate statistics of
// mixture-of-experts sites; lib/translator/score_commands.h).
// Covered by tests/metrics/score_cli_test.cpp and tests/translator/scoring_test.cpp.
#include "common/cpu_threads.h"
#include "metrics/score_cli.h"
#include "translator/score_commands.h"

int main(int argc, char** argv) {
  moe::rerun_with_openmp_spin(argv);  // libgomp idle threads: short spinning (common/cpu_threads.h)
  if (!moe::apply_cpu_threads_flag(argc, argv)) return 2;  // --cpu-threads N (common/cpu_threads.h)
  return moe::metrics::score_main(argc, argv, moe::register_model_subcommands);
}
