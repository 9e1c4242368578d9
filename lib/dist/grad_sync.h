// GradSync: data-parallel gradient all-reduce in buckets, overlapped with the backward pass.
// The trainable ranges of a ParameterStore's flat gradient buffer are cut into buckets of about
// bucket_bytes (at parameter boundaries where possible). During the last backward of an update the
// graph reports each parameter whose gradient is complete (Graph::set_param_grad_hook -> ready());
// buckets are handed, in a fixed order (from the end of the buffer, the order backward completes them),
// to a communication thread as soon as every parameter they hold is complete, so their all-reduce
// runs while backward computes the rest. finish() hands over what is left (parameters this batch
// never used) in the same order and waits. Every rank therefore issues the same collectives in the
// same order whatever its tokens did. The sum is divided by nothing: the trainer scales the loss by
// 1 / (target tokens of the global batch), so the summed gradients are those of the global mean.
// Covered by tests/dist/data_parallel_test.cpp.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/communicator.h"
#include "graph/parameters.h"

namespace moe::dist {

class GradSync {
 public:
  /// include: the trainable parameters to sum (default: all of them).
  GradSync(Communicator& comm, const ParameterStore& store, int64_t bucket_bytes,
           const std::function<bool(const ParamEntry&)>& include = {});
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  /// Starts an update's synchronisation (every bucket waits for its parameters again).
  void begin();
  /// Parameter `index`'s gradient is complete (the graph's hook; main thread only).
  void ready(int index);
  /// Hands over the remaining buckets and waits until every bucket is summed over the ranks.
  void finish();

  struct Stats {
    int64_t buckets = 0, bytes = 0;  // per update
    double comm_s = 0;               // seconds the communication thread spent in all-reduces
    double wait_s = 0;               // seconds finish() waited for it (the part not hidden by backward)
  };
  /// Totals since construction; overlap fraction = 1 - wait_s / comm_s.
  const Stats& stats() const { return stats_; }
  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    int64_t begin = 0, end = 0;  // element range of the flat gradient buffer
    int params = 0, pending = 0;
  };
  void launch_ready();
  void push(size_t bucket);
  void comm_loop();

  Communicator& comm_;
  Tensor grads_;
  std::vector<Bucket> buckets_;                // in launch order
  std::vector<std::vector<size_t>> of_param_;  // parameter index -> buckets holding part of it
  size_t next_ = 0;                            // the next bucket to hand over
  Stats stats_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> queue_;
  size_t done_ = 0;  // buckets summed in this update
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace moe::dist
