// grad_sync.h implementation: bucket layout from the store's entries, readiness counting, and the
// communication thread (the only thread that calls the communicator while a bucket is in flight).
// Covered by tests/dist/data_parallel_test.cpp.
#include "dist/grad_sync.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace moe::dist {

GradSync::GradSync(Communicator& comm, const ParameterStore& store, int64_t bucket_bytes,
                   const std::function<bool(const ParamEntry&)>& include)
    : comm_(comm), grads_(store.grads()) {
  MOE_CHECK(bucket_bytes > 0, "GradSync: bucket size must be > 0 bytes, got ", bucket_bytes);
  MOE_CHECK(grads_.defined(), "GradSync: the parameter store is not allocated");
  const int64_t per_bucket = std::max<int64_t>(1, bucket_bytes / 4);  // f32 gradients
  // Trainable parameters from the end of the buffer to its start: the order backward completes them.
  std::vector<int> order;
  for (size_t i = 0; i < store.entries().size(); ++i)
    if (store.entries()[i].trainable && !store.entries()[i].state && store.entries()[i].shape.numel() > 0 &&
        (!include || include(store.entries()[i])))
      order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return store.entry(a).offset > store.entry(b).offset; });
  of_param_.resize(store.entries().size());
  Bucket cur;
  auto close = [&] {
    if (cur.params) buckets_.push_back(cur);
    cur = Bucket{};
  };
  for (int p : order) {
    const ParamEntry& e = store.entry(p);
    int64_t begin = e.offset, end = e.offset + e.shape.numel();
    // Parameters start at multiples of 16 elements, so a gap of 16 or more means that something left out
    // lies between: a bucket never spans it.
    if (cur.params && cur.begin - end >= 16) close();
    // A parameter larger than a bucket is split into several; smaller ones share buckets.
    while (end > begin) {
      if (!cur.params) cur.begin = cur.end = end;
      const int64_t room = per_bucket - (cur.end - cur.begin);
      const int64_t take = std::min(room, end - begin);
      // Buckets grow downwards (towards offset 0) and hold one contiguous range: the padding between
      // parameters comes along (never written, so zeros on every rank).
      cur.begin = end - take;
      ++cur.params;
      of_param_[static_cast<size_t>(p)].push_back(buckets_.size());
      end -= take;
      if (cur.end - cur.begin >= per_bucket) close();
    }
  }
  close();
  // Merged ranges can overlap the next parameter's padding only; keep them disjoint and ordered.
  for (size_t b = 1; b < buckets_.size(); ++b) buckets_[b].end = std::min(buckets_[b].end, buckets_[b - 1].begin);
  thread_ = std::thread([this] { comm_loop(); });
}

GradSync::~GradSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradSync::begin() {
  for (Bucket& b : buckets_) b.pending = b.params;
  next_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = 0;
  error_ = nullptr;
}

void GradSync::ready(int index) {
  if (static_cast<size_t>(index) >= of_param_.size()) return;
  for (size_t b : of_param_[static_cast<size_t>(index)]) --buckets_[b].pending;
  launch_ready();
}

void GradSync::launch_ready() {
  while (next_ < buckets_.size() && buckets_[next_].pending <= 0) push(next_++);
}

void GradSync::push(size_t bucket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(bucket);
  }
  cv_.notify_all();
}

void GradSync::finish() {
  while (next_ < buckets_.size()) push(next_++);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ == buckets_.size() || error_; });
  stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error_) {
    // Drop the rest: the job is failing.
    queue_.clear();
    std::rethrow_exception(error_);
  }
}

void GradSync::comm_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const size_t b = queue_.front();
    queue_.pop_front();
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr err;
    try {
      comm_.all_reduce(grads_.flat_range(buckets_[b].begin, buckets_[b].end - buckets_[b].begin));
    } catch (...) {
      err = std::current_exception();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    stats_.comm_s += s;
    ++stats_.buckets;
    stats_.bytes += (buckets_[b].end - buckets_[b].begin) * 4;
    ++done_;
    if (err) error_ = err;
    cv_.notify_all();
  }
}

}  // namespace moe::dist
