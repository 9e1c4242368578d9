// Dynamic batching across requests: jobs (a request's sentences) wait in arrival order; a worker takes
// the oldest job together with the later ones of the same key (same model and search options) while
// their tokens sum to at most max_tokens, once that sum reaches max_tokens, or the oldest job has waited
// max_wait, or the queue is closed (draining). A job that arrives alone does not wait at all: in an empty
// queue, more than max_wait after the previous arrival, and after a batch of one job (a lone client, whose
// company never comes; waiting would only add max_wait to its latency). After a batch of several jobs the
// next arrival waits as usual: its clients' answers went out together and their next requests are on the
// way. The queue holds at most max_lines sentences: a job that would pass it is refused (the server
// answers 503 with Retry-After). Job is any type with members `key` (equality-comparable), `tokens` and
// `lines` (int64_t).
// Covered by tests/serving/batch_queue_test.cpp.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace moe::serving {

struct BatchLimits {
  int64_t max_tokens = 4096;              // jobs' tokens taken together (translation: source tokens x beam)
  std::chrono::milliseconds max_wait{5};  // the longest the oldest job waits for company
  int64_t max_lines = 4096;               // sentences queued at once
};

enum class PushResult { accepted, full, closed };

template <class Job>
class BatchQueue {
 public:
  using Clock = std::chrono::steady_clock;
  explicit BatchQueue(BatchLimits limits) : limits_(limits) {}

  PushResult push(Job job) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return PushResult::closed;
      if (lines_ > 0 && lines_ + job.lines > limits_.max_lines) return PushResult::full;
      lines_ += job.lines;
      const auto now = Clock::now();
      const bool alone =
          queue_.empty() && last_batch_jobs_ <= 1 && (!arrived_ || now - last_arrival_ > limits_.max_wait);
      queue_.push_back({std::move(job), alone ? now - limits_.max_wait : now});
      last_arrival_ = now;
      arrived_ = true;
    }
    ready_.notify_all();
    return PushResult::accepted;
  }

  /// The next batch (at least one job, in arrival order); empty once the queue is closed and drained.
  std::vector<Job> take() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (queue_.empty()) {
        if (closed_) return {};
        ready_.wait(lock);
        continue;
      }
      const auto deadline = queue_.front().since + limits_.max_wait;
      if (closed_ || same_key_tokens() >= limits_.max_tokens || Clock::now() >= deadline) break;
      ready_.wait_until(lock, deadline);
    }
    std::vector<Job> batch;
    int64_t tokens = 0;
    for (auto it = queue_.begin(); it != queue_.end();) {
      const bool first = batch.empty();
      if (!first && (!(it->job.key == batch.front().key) || tokens + it->job.tokens > limits_.max_tokens)) {
        ++it;
        continue;
      }
      tokens += it->job.tokens;
      lines_ -= it->job.lines;
      batch.push_back(std::move(it->job));
      it = queue_.erase(it);
    }
    last_batch_jobs_ = static_cast<int64_t>(batch.size());
    return batch;
  }

  /// No more pushes; take() hands out what is queued, then empty batches.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  /// Sentences waiting.
  int64_t lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  struct Entry {
    Job job;
    Clock::time_point since;  // its arrival; max_wait earlier for a job that arrived alone (no wait)
  };
  int64_t same_key_tokens() const {
    int64_t sum = 0;
    for (const Entry& e : queue_)
      if (e.job.key == queue_.front().job.key) sum += e.job.tokens;
    return sum;
  }

  BatchLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Entry> queue_;
  int64_t lines_ = 0;
  bool closed_ = false;
  bool arrived_ = false;  // a job has arrived: last_arrival_ is set
  Clock::time_point last_arrival_;
  int64_t last_batch_jobs_ = 0;  // jobs in the batch take() handed out last
};

}  // namespace moe::serving
