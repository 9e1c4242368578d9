// program.h implementation. Covered by tests/unit/cpu_threads_test.cpp.
#include "cli/program.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cpu_threads.h"
#include "tensor/host_limits.h"

namespace moe::cli {

void add_cpu_threads_option(CLI::App& app) {
  app.add_option_function<int>(
         "--cpu-threads", [](const int& n) { set_cpu_threads(n); },
         "threads of CPU ops (0 = the physical cores, the default)")
      ->check(CLI::Range(0, 1024));
}

int run_program(const char* program, int argc, char** argv, const std::function<int(int, char**)>& body) {
  rerun_with_runtime_env(argv);  // libgomp's spinning, OpenBLAS's kernels (common/cpu_threads.h)
  try {
    cpu_threads();  // the default thread count, capped under an address-space limit (an error below 512 MiB)
    return body(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << program << ": out of memory outside the tensor allocator (" << HostLimits::current().describe()
              << ")\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace moe::cli
