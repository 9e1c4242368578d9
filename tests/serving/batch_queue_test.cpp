// The dynamic batching queue (lib/serving/batch_queue.h): batches of one key up to max_tokens, the
// wait for company (none for a job arriving alone), the queue's capacity, and draining after close().
#include "serving/batch_queue.h"

#include <catch2/catch.hpp>
#include <thread>

using namespace moe::serving;

namespace {
struct TestJob {
  int key = 0;
  int64_t tokens = 1, lines = 1;
  int id = 0;
};

std::vector<int> ids(const std::vector<TestJob>& jobs) {
  std::vector<int> out;
  for (const auto& j : jobs) out.push_back(j.id);
  return out;
}
}  // namespace

TEST_CASE("the queue batches jobs of one key up to max_tokens, oldest first", "[serving]") {
  BatchQueue<TestJob> q({.max_tokens = 10, .max_wait = std::chrono::milliseconds(0), .max_lines = 100});
  q.push({.key = 1, .tokens = 4, .id = 0});
  q.push({.key = 2, .tokens = 4, .id = 1});
  q.push({.key = 1, .tokens = 4, .id = 2});
  q.push({.key = 1, .tokens = 4, .id = 3});  // would pass 10 tokens with 0 and 2
  q.push({.key = 1, .tokens = 2, .id = 4});
  CHECK(q.lines() == 5);
  CHECK(ids(q.take()) == std::vector<int>{0, 2, 4});
  CHECK(ids(q.take()) == std::vector<int>{1});
  CHECK(ids(q.take()) == std::vector<int>{3});
  CHECK(q.lines() == 0);
  q.push({.key = 1, .tokens = 50, .id = 5});  // larger than max_tokens: alone
  CHECK(ids(q.take()) == std::vector<int>{5});
}

TEST_CASE("the oldest job waits max_wait for company, not longer", "[serving]") {
  BatchQueue<TestJob> q({.max_tokens = 100, .max_wait = std::chrono::milliseconds(200), .max_lines = 100});
  q.push({.key = 1, .tokens = 1, .id = 9});  // an earlier arrival: job 0 comes within max_wait of it
  CHECK(ids(q.take()) == std::vector<int>{9});
  q.push({.key = 1, .tokens = 1, .id = 0});
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    q.push({.key = 1, .tokens = 1, .id = 1});
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(ids(q.take()) == std::vector<int>{0, 1});  // the second arrived within the wait
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  late.join();
  CHECK(waited >= 0.15);
  CHECK(waited < 5);
  // Enough tokens end the wait at once.
  BatchQueue<TestJob> full({.max_tokens = 2, .max_wait = std::chrono::seconds(60), .max_lines = 100});
  full.push({.key = 1, .tokens = 1, .id = 0});
  full.push({.key = 1, .tokens = 1, .id = 1});
  CHECK(ids(full.take()) == std::vector<int>{0, 1});
}

TEST_CASE("a job arriving alone (after a lone job, max_wait after the last arrival) does not wait", "[serving]") {
  using std::chrono::milliseconds;
  BatchQueue<TestJob> q({.max_tokens = 100, .max_wait = milliseconds(300), .max_lines = 100});
  const auto taken_within = [&](int id) {  // seconds from the push to the take
    const auto t0 = std::chrono::steady_clock::now();
    q.push({.key = 1, .tokens = 1, .id = id});
    CHECK(ids(q.take()) == std::vector<int>{id});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  CHECK(taken_within(0) < 0.2);  // the first arrival ever
  std::this_thread::sleep_for(milliseconds(400));
  CHECK(taken_within(1) < 0.2);  // 400 ms after the previous one
  CHECK(taken_within(2) >= 0.25);  // at once after job 1: it waits for company
  // After a batch of several jobs the next arrival waits, however long after the last: its clients'
  // answers went out together, and their next requests are on the way.
  q.push({.key = 1, .tokens = 1, .id = 3});
  q.push({.key = 1, .tokens = 1, .id = 4});
  CHECK(ids(q.take()) == std::vector<int>{3, 4});
  std::this_thread::sleep_for(milliseconds(400));
  CHECK(taken_within(5) >= 0.25);
  std::this_thread::sleep_for(milliseconds(400));
  CHECK(taken_within(6) < 0.2);  // after the lone job 5
}

TEST_CASE("a full queue refuses; a closed one drains, then returns nothing", "[serving]") {
  BatchQueue<TestJob> q({.max_tokens = 100, .max_wait = std::chrono::seconds(60), .max_lines = 3});
  CHECK(q.push({.lines = 2, .id = 0}) == PushResult::accepted);
  CHECK(q.push({.lines = 2, .id = 1}) == PushResult::full);
  CHECK(q.push({.lines = 1, .id = 2}) == PushResult::accepted);
  q.close();
  CHECK(q.push({.lines = 1, .id = 3}) == PushResult::closed);
  CHECK(ids(q.take()) == std::vector<int>{0, 2});  // no wait once closed
  CHECK(q.take().empty());
  // A worker blocked in take() wakes up on close().
  BatchQueue<TestJob> idle({});
  std::thread worker([&] { CHECK(idle.take().empty()); });
  idle.close();
  worker.join();
}
