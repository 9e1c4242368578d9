// moe-translate: raw text in, detokenised translations out, with a trained checkpoint
// (`moe-translate -m model.safetensors < in > out`; see lib/translator/translate_cli.h).
// Covered by tests/translator/translate_cli_test.cpp.
#include "common/cpu_threads.h"
#include "translator/translate_cli.h"

int main(int argc, char** argv) {
  moe::rerun_with_openmp_spin(argv);  // libgomp idle threads: short spinning (common/cpu_threads.h)
  if (!moe::apply_cpu_threads_flag(argc, argv)) return 2;  // --cpu-threads N (common/cpu_threads.h)
  return moe::translate_main(argc, argv);
}
