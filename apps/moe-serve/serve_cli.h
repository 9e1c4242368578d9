// The moe-serve command line: `moe-serve -m CKPT [--name NAME] [-m CKPT2 --name NAME2 ...] [--host H]
// [--port P]` plus batching (--max-tokens, --max-wait-ms), limits (body, lines, line length, queue,
// per-request timeout, slow clients' read timeout) and the device. Loads every model, starts one worker for
// the device (lib/serving/worker.h) and the HTTP routes (http_routes.h), serves until SIGTERM or SIGINT,
// then stops accepting, finishes what is queued and in flight, and exits 0. Covered by tests/scripts/serve.sh.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

struct ServeOptions {
  std::vector<std::string> models, names;
  std::string host = "127.0.0.1";
  int port = 8080;        // 0: any free port (logged, and written to --port-file)
  std::string port_file;  // where the bound port is written once listening
  std::string device = "auto", dtype = "f32";
  int64_t max_tokens = 4096;  // source tokens decoded together (moe-translate's --max-tokens)
  int64_t max_wait_ms = 5;    // the longest a request waits for others to batch with
  int64_t max_body_bytes = 1 << 20, max_lines = 256, max_line_bytes = 4096, max_queue_lines = 4096;
  double request_timeout_s = 60, read_timeout_s = 5;
  int http_threads = 32;
  bool quiet = false;  // no request log
};

/// main() of moe-serve.
int serve_main(int argc, char** argv);

}  // namespace moe
