// moe-average: averages the parameters of checkpoints (`-o OUT ckpt1 ckpt2 ...` or `--last N --run-dir DIR`);
// --quantize int8 writes the result pre-quantized (models/int8_model.h). Logic in lib/training/average.cpp;
// covered by tests/training/checkpoint_test.cpp and tests/scripts/e2e_translation.sh (int8).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/enum_option.h"
#include "cli/program.h"
#include "models/checkpoint.h"
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
  moe::Quantize quantize = moe::Quantize::none;
  moe::cli::add_enum_option(app, "--quantize", quantize,
                            "int8: write the weights int8 with f32 scales (per output column; per row for the "
                            "embedding tables), about a quarter of the size, for moe-translate");
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
    if (quantize != moe::Quantize::none) {
      const moe::LoadedCheckpoint ck = moe::load_checkpoint(output, moe::Device::cpu());
      moe::save_checkpoint(output, *ck.model, *ck.params, ck.vocab_files, ck.metadata, quantize);
    }
    spdlog::info("moe-average: wrote {} (the mean of {} checkpoints{})", output, inputs.size(),
                 quantize == moe::Quantize::none ? "" : ", " + moe::enum_name(quantize));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return moe::cli::run_program("moe-average", argc, argv, run); }
