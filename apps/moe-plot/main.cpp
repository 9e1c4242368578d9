// moe-plot: SVG pictures of training curves (one or more runs) and of expert usage. Logic in lib/plot/
// (figures.h), the command line in plot_cli.h; covered by tests/plot/plot_test.cpp.
#include <iostream>

#include "cli/program.h"
#include "moe-plot/plot_cli.h"

int main(int argc, char** argv) {
  return moe::cli::run_program("moe-plot", argc, argv,
                               [](int n, char** v) { return moe::plot::plot_main(n, v, std::cout, std::cerr); });
}
