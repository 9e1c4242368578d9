// Prefetcher<Gen>: runs gen.next() on a background thread into a bounded queue, so batches are
// ready while the model computes. Gen has `std::optional<B> next()` (nullopt = end of an epoch) and
// `State state()`; each item carries the state after its batch, which is what a checkpoint saves.
// Errors on the thread are rethrown by next(). Covered by tests/data/batch_generator_test.cpp and
// tests/data/lm_stream_test.cpp.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace moe::data {

template <class Gen>
class Prefetcher {
 public:
  using BatchT = typename decltype(std::declval<Gen&>().next())::value_type;
  using State = typename Gen::State;
  struct Item {
    std::optional<BatchT> batch;  // nullopt: end of an epoch
    State state;
  };

  explicit Prefetcher(std::unique_ptr<Gen> gen, size_t capacity = 16)
      : gen_(std::move(gen)), capacity_(capacity ? capacity : 1), thread_([this] { run(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// Blocks until an item is ready.
  Item next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || error_; });
    if (queue_.empty()) std::rethrow_exception(error_);
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    cv_.notify_all();
    return item;
  }

 private:
  void run() {
    try {
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
          if (stop_) return;
        }
        Item item{gen_->next(), {}};  // the slow part, outside the lock
        item.state = gen_->state();
        {
          std::lock_guard<std::mutex> lock(mu_);
          queue_.push_back(std::move(item));
        }
        cv_.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
      }
      cv_.notify_all();
    }
  }

  std::unique_ptr<Gen> gen_;
  size_t capacity_;
  std::deque<Item> queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after every other member exists
};

}  // namespace moe::data
