// moe-serve: an HTTP/1.1 JSON server that translates, continues prompts and scores with checkpoints loaded once,
// batching the sentences of concurrent requests (`moe-serve -m model.safetensors --port 8080`; the command line is
// serve_cli.h, the API docs/SERVING.md). Covered by tests/scripts/serve.sh.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/program.h"
#include "moe-serve/serve_cli.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("moe-serve"));
  return moe::cli::run_program("moe-serve", argc, argv, moe::serve_main);
}
