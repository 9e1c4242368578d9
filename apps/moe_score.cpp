// moe-score: corpus metrics on text files. `moe-score bleu -r REF [-i HYP]`, `moe-score chrf ...`
// (sacreBLEU 2.x compatible; see lib/metrics/). Covered by tests/metrics/score_cli_test.cpp.
#include "metrics/score_cli.h"

int main(int argc, char** argv) { return moe::metrics::score_main(argc, argv); }
