// moe-serve's counters and their Prometheus text exposition (format 0.0.4): requests by endpoint and
// status, a request latency histogram, batch sizes (sentences per decoded batch), target tokens and
// decoding seconds (their ratio is the tokens/s gauge), the queued sentences dropped unread (their client
// hung up or timed out), with the queue depth and the tensor memory in use read when scraped.
// Thread-safe. Covered by tests/serving/metrics_test.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/named_enum.h"

namespace moe::serving {

MOE_NAMED_ENUM(Endpoint, translate, generate, score, health, models, metrics, other)

/// A cumulative histogram with fixed upper bounds (the last bucket, +Inf, is implicit).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double x);
  /// Prometheus lines of `name` (with `_bucket`, `_sum`, `_count`).
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void request_done(Endpoint endpoint, int status, double seconds);
  void batch_done(int64_t sentences, int64_t target_tokens, double seconds);
  void sentences_dropped(int64_t sentences);
  /// The exposition, with the gauges sampled now.
  std::string prometheus(int64_t queue_lines, int64_t memory_bytes) const;
  /// Requests to `endpoint` answered so far with `status`.
  uint64_t answered(Endpoint endpoint, int status) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<Endpoint, int>, uint64_t> requests_;
  Histogram latency_, batch_sentences_;
  uint64_t batches_ = 0;
  int64_t target_tokens_ = 0, dropped_sentences_ = 0;
  double decode_seconds_ = 0;
};

}  // namespace moe::serving
