// moe-average: averages the parameters of checkpoints (`-o OUT ckpt1 ckpt2 ...` or `--last N --run-dir DIR`).
// Logic in lib/training/average.cpp; covered by tests/training/checkpoint_test.cpp.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/program.h"
#include "training/average.h"

namespace {
int run(int argc, char** argv) {
  CLI::App app{"moe-average: average the parameters of several checkpoints of one model"};
  std::vector<std::string> inputs;
  std::string output, run_dir;
  int64_t last = 0;
  app.add_option("-o,--output", output, "the averaged checkpoint")->required();
  app.add_option("checkpoints", inputs, "checkpoints to average");
  app.add_option("--last", last, "average the last N numbered checkpoints of --run-dir");
  app.add_option("--run-dir", run_dir, "the run folder for --last");
  moe::cli::add_cpu_threads_option(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (last > 0) {
      if (run_dir.empty() || !inputs.empty())
        throw std::runtime_error(
            "moe-average: --last N needs --run-dir DIR "
            "and no checkpoint arguments");
      inputs = moe::last_numbered_checkpoints(run_dir, last);
    }
    if (inputs.empty()) throw std::runtime_error("moe-average: give checkpoints or --last N --run-dir DIR");
    moe::average_checkpoints(inputs, output);
    spdlog::info("moe-average: wrote {} (the mean of {} checkpoints)", output, inputs.size());
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return moe::cli::run_program("moe-average", argc, argv, run); }
