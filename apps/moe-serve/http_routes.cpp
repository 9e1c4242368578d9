// http_routes.h implementation. Covered by tests/scripts/serve.sh.
#include "moe-serve/http_routes.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "moe-serve/client_connection.h"
#include "serving/responses.h"
#include "tensor/allocator.h"

namespace moe {

namespace {
using serving::Endpoint;
using serving::RequestError;

constexpr const char* kJson = "application/json";

/// The start of the request this thread is handling (set before routing, read by the logger).
thread_local std::chrono::steady_clock::time_point request_start;

Endpoint endpoint_of(const std::string& path) {
  if (path == "/v1/translate") return Endpoint::translate;
  if (path == "/v1/generate") return Endpoint::generate;
  if (path == "/v1/score") return Endpoint::score;
  if (path == "/health") return Endpoint::health;
  if (path == "/v1/models") return Endpoint::models;
  if (path == "/metrics") return Endpoint::metrics;
  return Endpoint::other;
}

void error(httplib::Response& res, int status, const std::string& field, const std::string& message) {
  res.status = status;
  res.set_content(serving::error_body(field, message), kJson);
}

/// What cpp-httplib's own error statuses mean (it answers them before any route runs).
std::string http_reason(int status) {
  switch (status) {
    case 400:
      return "bad request (malformed HTTP, or a body that is truncated or arrived too slowly)";
    case 404:
      return "no such endpoint (POST /v1/translate, POST /v1/generate, POST /v1/score, GET /health, GET /v1/models, "
             "GET /metrics)";
    case 405:
      return "method not allowed";
    case 408:
      return "request timeout";
    case 413:  // cpp-httplib caps form bodies (curl -d's default type) at 8 KiB whatever the limit
      return "request body too large (--max-body-bytes; 8 KiB when sent as application/x-www-form-urlencoded, "
             "curl -d's default: send Content-Type: application/json)";
    case 414:
      return "URI too long";
    default:
      return "HTTP status " + std::to_string(status);
  }
}

size_t model_index(const ServeContext& c, const std::string& name) {
  return serving::served_model(c.models, name, "model");
}

/// How often a handler waiting for its job looks whether its client has hung up.
constexpr std::chrono::milliseconds kHangUpPoll{25};

/// Queues the job `submit(client_gone)` makes, waits for it and answers with `body(result)`, or with the
/// queue's refusal, the timeout or the job's error. A client that hangs up meanwhile abandons its job
/// (dropped if still queued: the worker looks at the socket too when it takes the job) and is counted with
/// status 499 (nginx's "client closed request"; nobody reads the answer).
template <class Submit, class Body>
void answer(const ServeContext& c, const httplib::Request& req, httplib::Response& res, const Submit& submit,
            const Body& body) {
  const ClientConnection client(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  // By value: the worker may ask after this handler returned (a job abandoned meanwhile), when the
  // descriptor may be closed or reused; the answer then no longer matters, the job being abandoned.
  serving::Submitted job = submit([client] { return client.closed(); });
  if (job.pushed == serving::PushResult::full) {
    res.set_header("Retry-After", "1");
    return error(
        res, 503, "queue",
        "full: " + std::to_string(c.worker.queued_lines()) + " sentences are waiting (--max-queue-lines); retry later");
  }
  if (job.pushed == serving::PushResult::closed) return error(res, 503, "server", "shutting down");
  const auto deadline = std::chrono::steady_clock::now() + c.request_timeout;
  while (job.result.wait_for(std::min<std::chrono::steady_clock::duration>(
             kHangUpPoll, deadline - std::chrono::steady_clock::now())) == std::future_status::timeout) {
    const bool hung_up = client.closed();
    if (hung_up || std::chrono::steady_clock::now() >= deadline) {
      job.state->abandoned = true;
      if (hung_up) return error(res, 499, "client", "closed the connection before the answer");
      return error(res, 504, "server", "no answer within --request-timeout-s");
    }
  }
  serving::JobResult r = job.result.get();
  if (r.status != 200) return error(res, r.status, r.error_field, r.error);
  res.set_content(body(r), kJson);
}

/// Runs a handler, turning a RequestError into its status and JSON error.
template <class Handler>
httplib::Server::Handler guarded(Handler handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const RequestError& e) {
      error(res, e.status(), e.field(), e.message());
    } catch (const std::exception& e) {
      error(res, 500, "server", e.what());
    }
  };
}
}  // namespace

void add_routes(httplib::Server& server, ServeContext& c) {
  server.Post("/v1/translate", guarded([&c](const httplib::Request& req, httplib::Response& res) {
                const serving::TranslateRequest t = serving::parse_translate_request(req.body, c.limits, c.search);
                const size_t m = model_index(c, t.model);
                if (!c.models[m].translates())
                  throw RequestError("model",
                                     "'" + c.models[m].name + "' is a language model: use /v1/generate or /v1/score");
                int64_t truncated = 0;
                auto ids = serving::encode_request(c.models[m], t, truncated);
                auto prefixes = serving::encode_prefixes(c.models[m], t);
                // the job takes `ids`; links between words read them when the answer is written
                const auto word_sources = t.alignment && t.alignment->words ? ids : decltype(ids)();
                answer(
                    c, req, res,
                    [&](serving::ClientGone gone) {
                      return c.worker.translate(m, t, std::move(ids), std::move(prefixes), std::move(gone));
                    },
                    [&](const serving::JobResult& r) {
                      return serving::translate_body(c.models[m], t.search.n_best, r.hypotheses, truncated,
                                                     {t.alignment, t.word_scores}, word_sources);
                    });
              }));
  server.Post("/v1/generate", guarded([&c](const httplib::Request& req, httplib::Response& res) {
                const serving::GenerateRequest g = serving::parse_generate_request(req.body, c.limits, c.search);
                const size_t m = model_index(c, g.model);
                if (!c.models[m].generates())
                  throw RequestError("model", "'" + c.models[m].name + "' is not a causal language model" +
                                                  (c.models[m].translates() ? ": use /v1/translate" : ""));
                auto prompts = serving::encode_prompts(c.models[m], g);
                answer(
                    c, req, res,
                    [&](serving::ClientGone gone) {
                      return c.worker.generate(m, g, std::move(prompts), std::move(gone));
                    },
                    [&](const serving::JobResult& r) {
                      return serving::generate_body(c.models[m], g.search.n_best, r.hypotheses, g.word_scores);
                    });
              }));
  server.Post("/v1/score", guarded([&c](const httplib::Request& req, httplib::Response& res) {
                const serving::ScoreRequest s = serving::parse_score_request(req.body, c.limits);
                const size_t m = model_index(c, s.model);
                serving::check_score_request(c.models[m], s);
                const std::optional<size_t> lm = serving::fused_lm(c.models, m, s.lm);
                const int64_t lines = static_cast<int64_t>(s.text.size() + s.src.size());
                auto work = [&c, m, s, lm] {
                  return serving::score_body(c.models[m], s, c.worker.device(), c.dtype, lm ? &c.models[*lm] : nullptr);
                };
                answer(
                    c, req, res,
                    [&](serving::ClientGone gone) { return c.worker.run_alone(m, lines, work, std::move(gone)); },
                    [](const serving::JobResult& r) { return r.json; });
              }));
  server.Get("/health", [&c](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\",\"queue_sentences\":" + std::to_string(c.worker.queued_lines()) + "}", kJson);
  });
  server.Get("/v1/models", [&c](const httplib::Request&, httplib::Response& res) {
    res.set_content(serving::models_body(c.models, c.worker.device()), kJson);
  });
  server.Get("/metrics", [&c](const httplib::Request&, httplib::Response& res) {
    const auto memory = static_cast<int64_t>(allocator_for(c.worker.device()).stats().in_use);
    res.set_content(c.metrics.prometheus(c.worker.queued_lines(), memory), "text/plain; version=0.0.4");
  });
  // Errors cpp-httplib answers itself (no route, 413, a bad or truncated body) get a JSON body too.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    error(res, res.status, "http", http_reason(res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  server.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = std::chrono::steady_clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_logger([&c](const httplib::Request& req, const httplib::Response& res) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds =
        request_start.time_since_epoch().count() ? std::chrono::duration<double>(now - request_start).count() : 0.0;
    request_start = {};
    c.metrics.request_done(endpoint_of(req.path), res.status, seconds);
    spdlog::info("{} {} {} {} {:.1f} ms {} bytes", req.remote_addr, req.method, req.path, res.status, seconds * 1e3,
                 req.body.size());
  });
}

}  // namespace moe
