// serve_cli.h implementation: options (CLI11), model loading, the worker, cpp-httplib's server with its
// limits, and the shutdown on SIGTERM / SIGINT (common/stop_signal.h, polled by a watcher thread that
// stops the listener; queued and in-flight requests are then answered before the worker ends).
// Covered by tests/scripts/serve.sh.
#include "moe-serve/serve_cli.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <thread>

#include "cli/decoding_options.h"
#include "cli/program.h"
#include "cli/shortlist_option.h"
#include "common/cpu_threads.h"
#include "common/stop_signal.h"
#include "moe-serve/client_connection.h"
#include "moe-serve/http_routes.h"

namespace moe {

void add_serve_options(CLI::App& app, ServeOptions& o) {
  app.add_option("-m,--model", o.models, "checkpoint (.safetensors) to serve; repeat for several")->required();
  app.add_option("--name", o.names, "the name of each -m in requests' \"model\" (default: the file's stem)");
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cli::add_shortlist_option(app, o.shortlist,
                            "; for every translation model served (a model's pairs: the pieces in its vocabularies)");
  app.add_option("--port-file", o.port_file, "write the port listened on to this file once listening");
  cli::add_decoding_options(app, o.decoding);
  app.get_option("--max-tokens")
      ->description("hypotheses' tokens decoded together (source tokens x beam of several requests' sentences)");
  for (const auto* keys : {&search_key_names(), &sampling_key_names()})
    for (const std::string& key : *keys) {
      CLI::Option* opt = app.get_option(cli::flag_naming()(key));
      opt->description(opt->get_description() + " (the default of requests' \"" + key + "\")");
    }
  cli::add_cpu_threads_option(app);
  app.get_option("--cpu-threads")
      ->description("threads of CPU ops (0 = the physical cores; default: one core fewer, left to the HTTP threads)");
  app.add_option("--max-wait-ms", o.max_wait_ms,
                 "the longest a request waits for others to batch with (none when it arrives alone)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-body-bytes", o.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-lines", o.max_lines, "lines (pairs) per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-line-bytes", o.max_line_bytes, "bytes per line")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-queue-lines", o.max_queue_lines, "sentences queued at once; past it 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--request-timeout-s", o.request_timeout_s, "a request not answered by then gets 504")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--read-timeout-s", o.read_timeout_s,
                 "a client silent this long while sending gets 400 (slow clients)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-threads", o.http_threads, "connections served at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_flag("-q,--quiet", o.quiet, "no request log on stderr");
}

namespace {
/// The CPU threads of the worker's ops unless --cpu-threads is given: one physical core fewer than the
/// machine has (at least 1), left to the HTTP threads (parsing, JSON, sockets) and whatever else runs
/// beside the worker. An OpenMP team that takes every core stalls at each of the many small regions of a
/// decoding step whenever another thread holds one of its cores: on 2 cores at load 4-6, 16 clients got
/// 23 requests/s from a worker with 2 threads and 80 with 1, one client 7 and 27 (docs/PERF.md).
int default_cpu_threads() { return std::max(1, physical_cores() - 1); }

std::string stem_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return name.substr(0, name.find('.'));
}
}  // namespace

int run_serve(const ServeOptions& o) {
  MOE_CHECK(o.names.empty() || o.names.size() == o.models.size(), "--name given ", o.names.size(), " times for ",
            o.models.size(), " models (-m): name all or none");
  check_decoding_options(o.decoding, cli::flag_naming());
  const serving::RequestLimits limits{.max_lines = o.max_lines, .max_line_bytes = o.max_line_bytes};
  MOE_CHECK(o.decoding.search.beam <= limits.max_beam, "--beam ", o.decoding.search.beam, " is past the ",
            limits.max_beam, " a request may ask for");
  const Placement placement = decoding_placement(o.decoding, cli::flag_naming());
  const Device device = placement.device;
  const DType dtype = placement.dtype;
  std::vector<serving::ServedModel> models;
  for (size_t i = 0; i < o.models.size(); ++i) {
    models.push_back(
        serving::load_served_model(o.names.empty() ? stem_of(o.models[i]) : o.names[i], o.models[i], device));
    for (size_t j = 0; j < i; ++j)
      MOE_CHECK(models[j].name != models[i].name, "two models are called '", models[i].name, "' (use --name)");
    spdlog::info("model '{}': {} ({}) on {}", models[i].name, o.models[i], models[i].ck.model->type(), device.str());
    if (o.shortlist && models[i].translates()) {
      std::string summary;
      models[i].shortlist = cli::load_shortlist(*o.shortlist, *models[i].src, *models[i].tgt, summary);
      spdlog::info("model '{}': shortlist {}", models[i].name, summary);
    }
  }
  serving::ServerMetrics metrics;
  serving::Worker worker(models, device,
                         {.batching = {.max_tokens = translation_batch_tokens(o.decoding),
                                       .max_wait = std::chrono::milliseconds(o.max_wait_ms),
                                       .max_lines = o.max_queue_lines},
                          .dtype = dtype},
                         metrics);
  ServeContext context{models,
                       worker,
                       metrics,
                       limits,
                       o.decoding.search,
                       std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000)),
                       dtype};
  httplib::Server server;
  const int threads = o.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  const auto read_us = static_cast<int64_t>(o.read_timeout_s * 1e6);
  server.set_read_timeout(read_us / 1000000, read_us % 1000000);
  add_routes(server, context);

  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  MOE_CHECK(port > 0, "cannot listen on ", o.host, ":", o.port, " (in use, or not an address of this machine?)");
  raise_listen_backlog(port);
  if (!o.port_file.empty()) std::ofstream(o.port_file) << port << '\n';
  spdlog::info("listening on http://{}:{} ({} model(s), device {}, {} CPU threads, --max-tokens {}, --max-wait-ms {})",
               o.host, port, models.size(), device.str(), cpu_threads(), translation_batch_tokens(o.decoding),
               o.max_wait_ms);
  if (o.quiet) spdlog::set_level(spdlog::level::warn);  // the request log is at info level
  std::atomic<bool> done{false};
  std::thread watcher([&] {  // SIGTERM / SIGINT: stop accepting; listen_after_bind returns once handlers end
    while (!done && stop_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (; !done; std::this_thread::sleep_for(std::chrono::milliseconds(20))) server.stop();  // also before it runs
  });
  const bool listened = server.listen_after_bind();
  done = true;
  watcher.join();
  worker.close();  // finishes what is still queued
  spdlog::set_level(spdlog::level::info);
  spdlog::info("stopped{}: {} translate requests answered with 200",
               stop_signal() ? " by " + signal_name(stop_signal()) : "",
               metrics.answered(serving::Endpoint::translate, 200));
  MOE_CHECK(listened || stop_signal() != 0, "the HTTP server failed on ", o.host, ":", port);
  return 0;
}

int serve_main(int argc, char** argv) {
  ServeOptions o;
  CLI::App app("moe-serve: translate, generate and score over HTTP/1.1 + JSON, batching concurrent requests",
               "moe-serve");
  add_serve_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (app.count("--cpu-threads") == 0) set_cpu_threads(default_cpu_threads());
  install_stop_handlers("moe-serve");
  return run_serve(o);  // cli::run_program reports an error as "moe-serve: <what>" with status 1
}

}  // namespace moe
