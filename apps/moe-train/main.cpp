// moe-train: trains a translation model or a language model (model.type) from a recipe:
//   moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume] [--help]
// Keys: lib/training/train_options.cpp; the loop: lib/training/trainer.cpp.
// Covered by tests/training/resume_test.cpp, tests/scripts/e2e_translation.sh and e2e_lm.sh.
#include <spdlog/spdlog.h>

#include <iostream>

#include "common/cpu_threads.h"
#include "config/command_line.h"
#include "moe-train/bleu_decoder.h"
#include "training/trainer.h"

int main(int argc, char** argv) {
  moe::rerun_with_openmp_spin(argv);  // libgomp idle threads: short spinning (common/cpu_threads.h)
  if (!moe::apply_cpu_threads_flag(argc, argv)) return 2;  // --cpu-threads N (common/cpu_threads.h)
  try {
    moe::config::Schema schema;
    moe::register_train_keys(schema);
    std::vector<std::string> args;
    bool resume = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--resume")
        resume = true;
      else
        args.push_back(a);
    }
    const moe::config::CommandLine cmd = moe::config::parse_command_line(schema, args);
    if (cmd.help) {
      std::cout << "usage: moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume]\n"
                << "  --resume  continue run_dir/checkpoint.last.safetensors exactly where it stopped\n\n"
                << schema.help_text();
      return 0;
    }
    if (!cmd.positional.empty()) throw std::runtime_error("moe-train: unexpected argument '" + cmd.positional[0] + "'");
    moe::config::Config config = moe::config::load_config(schema, cmd);
    moe::settle_model_keys(config);  // the dump shows the model type's own defaults
    const std::string text = moe::config::dump_config(config);
    if (cmd.dump_config) {
      std::cout << text;
      return 0;
    }
    const moe::TrainOptions options = moe::TrainOptions::from_config(config);
    moe::Trainer trainer(options, text);
    trainer.set_bleu_decoder(moe::translator_bleu_decoder(options.valid));
    trainer.run(resume);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
