// train_cli.h implementation. Covered by tests/scripts/e2e_translation.sh.
#include "moe-train/train_cli.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/program.h"
#include "common/stop_signal.h"
#include "config/recipe_args.h"
#include "moe-train/bleu_decoder.h"
#include "training/trainer.h"

namespace moe {

int train_main(int argc, char** argv) {
  config::Schema schema;
  register_train_keys(schema);
  CLI::App app(
      "moe-train: trains a translation model or a language model (model.type) from a YAML recipe\n"
      "usage: moe-train --config recipe.yml [--section.key value ...] [--dump-config] [--resume]\n"
      "exit status: 0 done, 1 an error, 75 stopped by SIGTERM / SIGINT / SIGUSR1 after saving checkpoint.last "
      "(train.on_signal; docs/CLUSTERS.md)",
      "moe-train");
  bool resume = false, dump = false;
  app.add_flag("--resume", resume, "continue run_dir/checkpoint.last.safetensors exactly where it stopped");
  app.add_flag("--dump-config", dump, "print the merged configuration (every key) and exit");
  cli::add_cpu_threads_option(app);
  app.allow_extras();  // the recipe arguments, read by the config layer below
  app.footer(
      "Recipe arguments: --config FILE (-c; repeatable, merged in order), then any key as --section.key "
      "value (or --section.key=value; a bool key alone means true):\n\n" +
      schema.help_text());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
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
