// moe-train: trains a translation model or a language model (model.type) from a recipe:
//   moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume] [--help]
// The command line: train_cli.h; the keys: lib/training/train_options.cpp and the model registry; the
// loop: lib/training/trainer.cpp. Covered by tests/training/resume_test.cpp,
// tests/scripts/e2e_translation.sh and e2e_lm.sh.
#include "cli/program.h"
#include "moe-train/train_cli.h"

int main(int argc, char** argv) { return moe::cli::run_program("moe-train", argc, argv, moe::train_main); }
