// moe-plot: SVG pictures of training curves (one or more runs) and of expert usage. Logic in
// lib/plot/ (plot_cli.h); covered by tests/plot/plot_test.cpp.
#include <iostream>

#include "plot/plot_cli.h"

int main(int argc, char** argv) { return moe::plot::plot_main(argc, argv, std::cout, std::cerr); }
