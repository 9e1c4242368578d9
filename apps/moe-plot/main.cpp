// moe-plot: SVG pictures of training curves (one or more runs) and of expert usage. Logic in
// lib/plot/ (plot_cli.h); covered by tests/plot/plot_test.cpp.
#include <iostream>

#include "common/cpu_threads.h"
#include "plot/plot_cli.h"

int main(int argc, char** argv) {
  moe::rerun_with_openmp_spin(argv);  // libgomp idle threads: short spinning (common/cpu_threads.h)
  if (!moe::apply_cpu_threads_flag(argc, argv)) return 2;  // --cpu-threads N (common/cpu_threads.h)
  return moe::plot::plot_main(argc, argv, std::cout, std::cerr);
}
