// moe-translate: raw text in, detokenised translations out, with a trained checkpoint
// (`moe-translate -m model.safetensors < in > out`; the command line is translate_cli.h).
// Covered by tests/translator/translate_cli_test.cpp.
#include "cli/program.h"
#include "moe-translate/translate_cli.h"

int main(int argc, char** argv) { return moe::cli::run_program("moe-translate", argc, argv, moe::translate_main); }
