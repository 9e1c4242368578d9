// The moe-serve command line: `moe-serve -m CKPT [--name NAME] [-m CKPT2 --name NAME2 ...] [--host H]
// [--port P]` plus batching (--max-tokens, --max-wait-ms), limits (body, lines, line length, queue,
// per-request timeout, slow clients' read timeout), the device and the search flags of moe-translate (the
// defaults of requests that leave them out): the shared decoding options (cli/decoding_options.h), and
// moe-translate's --shortlist for every translation model (cli/shortlist_option.h). Loads
// every model, starts one worker for the device (lib/serving/worker.h) and the HTTP routes (http_routes.h),
// serves until SIGTERM or SIGINT, then stops accepting, finishes what is queued and in flight, and exits 0.
// Covered by tests/scripts/serve.sh.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/shortlist_option.h"
#include "models/decoding_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace moe {

struct ServeOptions {
  std::vector<std::string> models, names;
  std::string host = "127.0.0.1";
  int port = 8080;        // 0: any free port (logged, and written to --port-file)
  std::string port_file;  // where the bound port is written once listening
  DecodingOptions decoding;  // --device, --dtype, --max-tokens; the search flags: requests' defaults
  std::optional<cli::ShortlistSpec> shortlist;  // --shortlist: every translation model's batches
  int64_t max_wait_ms = 5;    // the longest a request waits for others to batch with
  int64_t max_body_bytes = 1 << 20, max_lines = 256, max_line_bytes = 4096, max_queue_lines = 4096;
  double request_timeout_s = 60, read_timeout_s = 5;
  int http_threads = 32;
  bool quiet = false;  // no request log
};

/// Adds every option of moe-serve to `app`, bound to `o`.
void add_serve_options(CLI::App& app, ServeOptions& o);

/// main() of moe-serve.
int serve_main(int argc, char** argv);

}  // namespace moe
