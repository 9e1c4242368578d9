// train_cli.h implementation. Covered by tests/scripts/e2e_translation.sh.
#include "moe-train/train_cli.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/program.h"
#include "common/stop_signal.h"
#include "config/recipe_args.h"
#include "layers/sites.h"
#include "moe-train/bleu_decoder.h"
#include "tensor/cuda_runtime.h"
#include "tensor/device.h"
#include "training/dry_run.h"
#include "training/trainer.h"

namespace moe {

int train_main(int argc, char** argv) {
  config::Schema schema;
  register_train_keys(schema);
  CLI::App app(
      "moe-train: trains a translation model or a language model (model.type) from a YAML recipe\n"
      "usage: moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume] [--dry-run]\n"
      "exit status: 0 done, 1 an error, 3 a dry run that does not fit, 75 stopped by SIGTERM / SIGINT / SIGUSR1 "
      "after saving checkpoint.last (train.on_signal; docs/CLUSTERS.md)",
      "moe-train");
  bool resume = false, dump = false;
  app.add_flag("--resume", resume, "continue run_dir/checkpoint.last.safetensors exactly where it stopped");
  app.add_flag("--dump-config", dump, "print the merged configuration (every key) and exit");
  bool dry = false;
  std::string dry_memory;
  DryRunOptions dry_options;
  app.add_flag("--dry-run", dry,
               "print parameters, FLOPs per token, updates per epoch, the schedule and the memory per GPU the "
               "recipe needs, from its shapes alone (nothing is allocated or trained), and exit: 0 when it fits, "
               "3 when it does not");
  app.add_option("--dry-run-memory", dry_memory,
                 "--dry-run: the memory of one GPU (e.g. 80GiB, 40GB; default: "
                 "cuda:0's free memory where a real GPU answers, else 80GiB)");
  app.add_option("--dry-run-vocab", dry_options.vocab,
                 "--dry-run: the vocabulary size, where no vocabulary file or data.vocab.size gives it");
  app.add_option("--dry-run-ranks", dry_options.ranks,
                 "--dry-run: the number of GPUs (data parallel; default: experts / experts_per_rank, else 1)");
  cli::add_cpu_threads_option(app);
  app.allow_extras();  // the recipe arguments, read by the config layer below
  app.footer(
      "Recipe arguments: --config FILE (-c; repeatable, merged in order), then any key as --section.key "
      "value (or --section.key=value; a bool key alone means true):\n\n" +
      schema.help_text() + "\nFeed-forward and mixture-of-experts options (inside model.ffn / model.moe):\n" +
      SiteRegistry::instance().help_text());
  CLI11_PARSE(app, argc, argv);
  try {
    const config::CommandLine cmd = config::parse_command_line(schema, app.remaining());
    MOE_CHECK(cmd.positional.empty(), "moe-train: unexpected argument '",
              cmd.positional.empty() ? "" : cmd.positional[0], "'");
    config::Config config = config::load_config(schema, cmd);
    settle_model_keys(config);  // the dump shows the model type's own defaults
    const std::string text = config::dump_config(config);
    if (dump) {
      std::cout << text;
      return 0;
    }
    const TrainOptions options = TrainOptions::from_config(config);
    if (dry) {
      const bool gpu = gpu_count() > 0 && !cuda_emulated();  // the emulator's 16 GiB is no GPU's
      dry_options.memory_bytes = !dry_memory.empty() ? parse_memory_size(dry_memory, "--dry-run-memory")
                                 : gpu               ? static_cast<double>(cuda::free_memory(0))
                                                     : dry_options.memory_bytes;
      const DryRunReport report = dry_run(options, dry_options);
      std::cout << report.render();
      return report.fits() ? 0 : 3;
    }
    Trainer trainer(options, text);
    trainer.set_bleu_decoder(translator_bleu_decoder(options.valid));
    // 75: stopped by a signal with checkpoint.last saved (training/stop_request.h)
    return trainer.run(resume) == TrainEnd::stopped ? kExitStopped : 0;
  } catch (const std::bad_alloc&) {
    throw;  // cli::run_program names the memory limits
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

}  // namespace moe
