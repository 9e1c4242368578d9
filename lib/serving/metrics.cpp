// metrics.h implementation. Covered by tests/serving/metrics_test.cpp.
#include "serving/metrics.h"

#include <sstream>

namespace moe::serving {

void Histogram::observe(double x) {
  size_t i = 0;
  while (i < bounds_.size() && x > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += x;
  ++count_;
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::ostringstream os;
  os << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    os << name << "_bucket{le=\"";
    if (i < bounds_.size())
      os << bounds_[i];
    else
      os << "+Inf";
    os << "\"} " << cumulative << '\n';
  }
  os << name << "_sum " << sum_ << '\n' << name << "_count " << count_ << '\n';
  return os.str();
}

ServerMetrics::ServerMetrics()
    : latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      batch_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {}

void ServerMetrics::request_done(Endpoint endpoint, int status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
  latency_.observe(seconds);
}

void ServerMetrics::batch_done(int64_t sentences, int64_t target_tokens, double seconds) {
  std::lock_guard lock(mutex_);
  ++batches_;
  batch_sentences_.observe(static_cast<double>(sentences));
  target_tokens_ += target_tokens;
  decode_seconds_ += seconds;
}

void ServerMetrics::sentences_dropped(int64_t sentences) {
  std::lock_guard lock(mutex_);
  dropped_sentences_ += sentences;
}

uint64_t ServerMetrics::answered(Endpoint endpoint, int status) const {
  std::lock_guard lock(mutex_);
  const auto it = requests_.find({endpoint, status});
  return it == requests_.end() ? 0 : it->second;
}

std::string ServerMetrics::prometheus(int64_t queue_lines, int64_t memory_bytes) const {
  std::lock_guard lock(mutex_);
  std::ostringstream os;
  os << "# HELP moe_serve_requests_total HTTP requests answered, by endpoint and status.\n"
     << "# TYPE moe_serve_requests_total counter\n";
  for (const auto& [key, count] : requests_)
    os << "moe_serve_requests_total{endpoint=\"" << enum_name(key.first) << "\",status=\"" << key.second << "\"} "
       << count << '\n';
  os << latency_.text("moe_serve_request_seconds", "Time from a request's arrival to its answer.");
  os << batch_sentences_.text("moe_serve_batch_sentences", "Sentences decoded together (several requests batched).");
  os << "# HELP moe_serve_queue_sentences Sentences waiting to be decoded.\n# TYPE moe_serve_queue_sentences gauge\n"
     << "moe_serve_queue_sentences " << queue_lines << '\n';
  os << "# HELP moe_serve_target_tokens_total Target tokens decoded (best hypotheses).\n"
     << "# TYPE moe_serve_target_tokens_total counter\nmoe_serve_target_tokens_total " << target_tokens_ << '\n';
  os << "# HELP moe_serve_dropped_sentences_total Queued sentences not decoded: their client hung up or timed out.\n"
     << "# TYPE moe_serve_dropped_sentences_total counter\nmoe_serve_dropped_sentences_total " << dropped_sentences_
     << '\n';
  os << "# HELP moe_serve_decode_seconds_total Seconds the worker spent decoding.\n"
     << "# TYPE moe_serve_decode_seconds_total counter\nmoe_serve_decode_seconds_total " << decode_seconds_ << '\n';
  os << "# HELP moe_serve_tokens_per_second Target tokens per second of decoding, since the start.\n"
     << "# TYPE moe_serve_tokens_per_second gauge\nmoe_serve_tokens_per_second "
     << (decode_seconds_ > 0 ? static_cast<double>(target_tokens_) / decode_seconds_ : 0.0) << '\n';
  os << "# HELP moe_serve_memory_bytes Tensor memory in use on the device.\n# TYPE moe_serve_memory_bytes gauge\n"
     << "moe_serve_memory_bytes " << memory_bytes << '\n';
  return os.str();
}

}  // namespace moe::serving
