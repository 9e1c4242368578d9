// moe-serve's Prometheus exposition (lib/serving/metrics.h): counters by endpoint and status,
// cumulative histogram buckets, the gauges, dropped sentences.
#include "serving/metrics.h"

#include <catch2/catch.hpp>

using namespace moe::serving;

TEST_CASE("metrics are Prometheus text with cumulative buckets", "[serving]") {
  ServerMetrics m;
  m.request_done(Endpoint::translate, 200, 0.003);
  m.request_done(Endpoint::translate, 200, 0.2);
  m.request_done(Endpoint::translate, 400, 0.001);
  m.batch_done(3, 30, 0.5);
  m.batch_done(1, 10, 0.5);
  m.sentences_dropped(5);
  m.sentences_dropped(2);
  CHECK(m.answered(Endpoint::translate, 200) == 2);
  CHECK(m.answered(Endpoint::score, 200) == 0);
  const std::string t = m.prometheus(7, 1024);
  CHECK_THAT(t, Catch::Contains("moe_serve_requests_total{endpoint=\"translate\",status=\"200\"} 2\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_requests_total{endpoint=\"translate\",status=\"400\"} 1\n"));
  CHECK_THAT(t, Catch::Contains("# TYPE moe_serve_request_seconds histogram\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_request_seconds_bucket{le=\"0.005\"} 2\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_request_seconds_bucket{le=\"0.25\"} 3\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_request_seconds_bucket{le=\"+Inf\"} 3\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_request_seconds_count 3\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_batch_sentences_bucket{le=\"1\"} 1\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_batch_sentences_bucket{le=\"4\"} 2\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_batch_sentences_sum 4\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_queue_sentences 7\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_target_tokens_total 40\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_tokens_per_second 40\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_memory_bytes 1024\n"));
  CHECK_THAT(t, Catch::Contains("moe_serve_dropped_sentences_total 7\n"));
}
