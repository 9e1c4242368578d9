// moe-train: trains a translation model or a language model (model.type) from a recipe:
//   moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume] [--help]
// The command line: train_cli.h; the keys: lib/training/train_options.cpp and the model registry; the
// loop: lib/training/trainer.cpp. Exit status: 0 done, 1 an error, 75 stopped by SIGTERM / SIGINT / SIGUSR1
// with checkpoint.last saved. Covered by tests/training/resume_test.cpp, tests/scripts/e2e_translation.sh,
// e2e_lm.sh and train_signals.sh.
#include "cli/program.h"
#include "moe-train/train_cli.h"

int main(int argc, char** argv) { return moe::cli::run_program("moe-train", argc, argv, moe::train_main); }
