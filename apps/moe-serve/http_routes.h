// moe-serve's routes on cpp-httplib: POST /v1/translate, POST /v1/generate, POST /v1/score, GET /health,
// GET /v1/models, GET /metrics; JSON errors naming the field for every 4xx/5xx (including those cpp-httplib
// makes itself: 413 for a body past --max-body-bytes, 400 for a truncated or timed-out body); 503 with
// Retry-After when the queue is full; 504 past the per-request timeout; 499 (logged and counted only)
// when the client hangs up before its answer (its queued sentences are then dropped); a request log
// line each (spdlog, info level) with the metrics recorded. Covered by tests/scripts/serve.sh.
#pragma once
#include <chrono>
#include <vector>

#include "serving/metrics.h"
#include "serving/request.h"
#include "serving/worker.h"

namespace httplib {
class Server;
}

namespace moe {

struct ServeContext {
  std::vector<serving::ServedModel>& models;
  serving::Worker& worker;
  serving::ServerMetrics& metrics;
  serving::RequestLimits limits;
  SearchOptions search;  // the defaults of translate and generate requests (--beam, ...)
  std::chrono::milliseconds request_timeout;
  DType dtype;
};

/// Installs the routes, the error handler and the request log on `server`.
void add_routes(httplib::Server& server, ServeContext& context);

}  // namespace moe
