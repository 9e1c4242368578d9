// Batch generator: token budgets including padding, every sentence once per epoch, filter counts,
// seeded determinism, exact resume from a saved state string (also across epochs), unshuffled
// order, batch counts per epoch, epochs of their own corpora (subword sampling), and the prefetch thread
// reproducing the same stream. Tests
// lib/data/batch_generator.cpp.
#include "data/batch_generator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "common/error.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

namespace {
EncodedCorpus random_corpus(int64_t n, int64_t max_len, uint64_t seed, bool allow_empty) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  std::vector<int64_t> off{0};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = static_cast<int64_t>(rng() % (max_len + 1)) + (allow_empty ? 0 : 1);
    for (int64_t k = 0; k < len; ++k) ids.push_back(4 + static_cast<int32_t>(rng() % 100));
    off.push_back(static_cast<int64_t>(ids.size()));
  }
  return EncodedCorpus(ids, off);
}

std::vector<std::vector<int64_t>> epoch_ids(BatchGenerator& g) {
  std::vector<std::vector<int64_t>> out;
  while (auto b = g.next()) out.push_back(b->ids);
  return out;
}
}  // namespace

TEST_CASE("batch generator: budgets, coverage and filter counts", "[data]") {
  auto src = random_corpus(3000, 60, 1, true), tgt = random_corpus(3000, 70, 2, true);
  BatchOptions o;
  o.max_tokens = 500;
  o.filter.max_src_len = 50;
  o.filter.max_ratio = 3.0;
  BatchGenerator g(src, tgt, o);
  const auto& st = g.filter_stats();
  CHECK(st.kept + st.empty + st.too_long + st.bad_ratio == 3000);
  CHECK(st.empty > 0);
  CHECK(st.too_long > 0);
  CHECK(st.bad_ratio > 0);
  std::multiset<int64_t> seen;
  int64_t batches = 0, real = 0, padded = 0;
  while (auto b = g.next()) {
    ++batches;
    CHECK(b->src.numel() <= o.max_tokens);      // B * S including padding and </s>
    CHECK(b->tgt_out.numel() <= o.max_tokens);
    CHECK(b->src.shape()[0] == b->size());
    for (size_t i = 0; i < b->ids.size(); ++i) {
      const int64_t id = b->ids[i];
      seen.insert(id);
      CHECK(b->src_lengths[i] == src.length(id) + 1);
      CHECK(o.filter.check(src.length(id), tgt.length(id)) == LengthFilter::Verdict::keep);
    }
    real += b->src_tokens;
    padded += b->src.numel();
  }
  CHECK(static_cast<int64_t>(seen.size()) == st.kept);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == seen.size());  // each once
  CHECK(double(real) / double(padded) > 0.9);  // bucketing keeps padding small
  CHECK(g.state().epoch == 1);
  CHECK(batches > 10);
}

TEST_CASE("batch generator: max_sentences, size-1 budget edge, errors", "[data]") {
  auto src = random_corpus(100, 9, 3, false), tgt = random_corpus(100, 9, 4, false);
  BatchOptions o;
  o.max_tokens = 1000;
  o.max_sentences = 7;
  BatchGenerator g(src, tgt, o);
  while (auto b = g.next()) CHECK(b->size() <= 7);
  o.max_sentences = 0;
  o.max_tokens = 5;  // sentences longer than 4 tokens cannot fit: dropped and counted
  BatchGenerator h(src, tgt, o);
  CHECK(h.filter_stats().too_long > 0);
  while (auto b = h.next()) {
    CHECK(b->src.numel() <= 5);
    CHECK(b->tgt_out.numel() <= 5);
  }
  CHECK_THROWS_WITH(BatchGenerator(src, random_corpus(99, 9, 4, false), o), Contains("100") && Contains("99"));
  o.max_tokens = 1;
  CHECK_THROWS_WITH(BatchGenerator(src, tgt, o), Contains("no sentence pairs left"));
}

TEST_CASE("batch generator: deterministic for a seed, different across seeds and epochs", "[data]") {
  auto src = random_corpus(2000, 40, 5, false), tgt = random_corpus(2000, 40, 6, false);
  BatchOptions o;
  o.max_tokens = 300;
  o.window = 400;
  BatchGenerator a(src, tgt, o), b(src, tgt, o);
  const auto ea = epoch_ids(a), eb = epoch_ids(b);
  CHECK(ea == eb);
  CHECK(epoch_ids(a) != ea);  // epoch 2 differs from epoch 1
  o.seed = 2;
  BatchGenerator c(src, tgt, o);
  CHECK(epoch_ids(c) != ea);
}

TEST_CASE("batch generator: batches_in_epoch counts each epoch's batches without making them", "[data]") {
  auto src = random_corpus(2000, 40, 9, false), tgt = random_corpus(2000, 40, 10, false);
  BatchOptions o;
  o.max_tokens = 300;
  o.window = 400;
  BatchGenerator g(src, tgt, o);
  const int64_t first = g.batches_in_epoch(0), second = g.batches_in_epoch(1);
  CHECK(static_cast<int64_t>(epoch_ids(g).size()) == first);
  CHECK(static_cast<int64_t>(epoch_ids(g).size()) == second);
  CHECK(g.batches_in_epoch(0) == first);  // a pure count: the stream's position does not change it
}

TEST_CASE("batch generator: exact resume from a saved state", "[data]") {
  auto src = random_corpus(1500, 30, 7, false), tgt = random_corpus(1500, 30, 8, false);
  BatchOptions o;
  o.max_tokens = 256;
  o.window = 300;
  o.seed = 42;
  BatchGenerator ref(src, tgt, o);
  std::vector<std::vector<int64_t>> stream;  // two epochs, with epoch markers
  for (int e = 0; e < 2; ++e) {
    for (auto& ids : epoch_ids(ref)) stream.push_back(ids);
    stream.push_back({-1});
  }
  for (size_t cut : {size_t(0), size_t(1), size_t(17), stream.size() / 2, stream.size() - 3}) {
    BatchGenerator a(src, tgt, o);
    size_t i = 0;
    for (; i < cut; ++i) {
      auto b = a.next();
      CHECK((b ? b->ids : std::vector<int64_t>{-1}) == stream[i]);
    }
    const std::string saved = a.state().to_string();
    BatchGenerator r(src, tgt, o);
    r.restore(BatchGenerator::State::from_string(saved));
    CHECK(r.state() == a.state());
    for (; i < stream.size(); ++i) {
      auto b = r.next();
      CHECK((b ? b->ids : std::vector<int64_t>{-1}) == stream[i]);
    }
  }
  CHECK_THROWS_WITH(BatchGenerator::State::from_string("{\"epoch\":1}"), Contains("cannot parse"));
  BatchGenerator other(src, tgt, BatchOptions{});
  CHECK_THROWS_WITH(other.restore(BatchGenerator::State{0, 0, 0, 42, 0}), Contains("seed 42"));
  auto o2 = o;
  o2.max_tokens = 300;  // a different budget cannot resume the same stream
  BatchGenerator changed(src, tgt, o2);
  CHECK_THROWS_WITH(changed.restore(ref.state()), Contains("other data, filters or batch options"));
}

TEST_CASE("batch generator: epochs of their own corpora (subword sampling), resumed exactly", "[data]") {
  // Epoch e's pairs are those of seeds 100 + e: other lengths and tokens every epoch, a function of e alone.
  auto corpora = [](int64_t epoch) {
    const auto s = static_cast<uint64_t>(epoch);
    return std::pair{random_corpus(600, 30, 100 + 2 * s, false), random_corpus(600, 30, 101 + 2 * s, false)};
  };
  std::mutex mutex;  // the generator encodes the next epoch on another thread
  std::vector<int64_t> asked;
  auto counted = [&](int64_t epoch) {
    const std::lock_guard<std::mutex> lock(mutex);
    asked.push_back(epoch);
    return corpora(epoch);
  };
  auto asked_sorted = [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    std::vector<int64_t> v = asked;
    std::sort(v.begin(), v.end());
    return v;
  };
  BatchOptions o;
  o.max_tokens = 256;
  o.seed = 5;
  o.filter.max_src_len = 28;                // each epoch filters its own lengths
  auto first_tokens = [](const Batch& b) {  // the first source token of every row
    std::vector<int32_t> first;
    for (int64_t row = 0; row < b.size(); ++row)
      first.push_back(b.src.to_vector<int32_t>()[static_cast<size_t>(row * b.src.shape()[1])]);
    return first;
  };
  std::vector<std::vector<int32_t>> tokens;  // first_tokens of every batch, epoch by epoch
  std::vector<std::string> states;
  auto ref = std::make_unique<BatchGenerator>(counted, o);
  CHECK(asked_sorted() == std::vector<int64_t>{0});
  for (int64_t e = 0; e < 3; ++e) {
    const EncodedCorpus src = corpora(e).first;
    std::set<int64_t> seen;
    while (auto b = ref->next()) {
      states.push_back(ref->state().to_string());
      for (int64_t r = 0; r < b->size(); ++r) {
        const int64_t id = b->ids[static_cast<size_t>(r)];
        CHECK(seen.insert(id).second);
        CHECK(b->src_lengths[static_cast<size_t>(r)] == src.length(id) + 1);  // this epoch's segmentation
        CHECK(src.length(id) <= 28);
      }
      tokens.push_back(first_tokens(*b));
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < src.size(); ++i) kept += src.length(i) <= 28;
    CHECK(static_cast<int64_t>(seen.size()) == kept);
  }
  ref.reset();                                                // waits for the epoch it was making ahead
  CHECK(asked_sorted() == std::vector<int64_t>{0, 1, 2, 3});  // each once, the next epoch's ahead
  // a generator restored in epoch 2 builds epoch 2's corpora and continues the same stream
  const size_t cut = tokens.size() - 5;
  asked.clear();
  auto r = std::make_unique<BatchGenerator>(counted, o);
  r->restore(BatchGenerator::State::from_string(states[cut - 1]));
  for (size_t i = cut; i < tokens.size(); ++i) {
    auto b = r->next();
    REQUIRE(b);
    CHECK(first_tokens(*b) == tokens[i]);
  }
  CHECK_FALSE(r->next());  // the end of epoch 2
  r.reset();
  CHECK(asked_sorted() == std::vector<int64_t>{0, 2, 3});
}

TEST_CASE("batch generator: unshuffled keeps corpus order", "[data]") {
  auto src = random_corpus(50, 10, 9, false), tgt = random_corpus(50, 10, 10, false);
  BatchOptions o;
  o.max_tokens = 40;
  o.shuffle = false;
  BatchGenerator g(src, tgt, o);
  std::vector<int64_t> all;
  for (auto& ids : epoch_ids(g)) all.insert(all.end(), ids.begin(), ids.end());
  std::vector<int64_t> expect(50);
  for (int64_t i = 0; i < 50; ++i) expect[i] = i;
  CHECK(all == expect);
}

TEST_CASE("batch prefetcher: same stream as the generator, states for checkpoints", "[data]") {
  auto src = random_corpus(800, 25, 11, false), tgt = random_corpus(800, 25, 12, false);
  BatchOptions o;
  o.max_tokens = 200;
  BatchGenerator ref(src, tgt, o);
  auto gen = std::make_unique<BatchGenerator>(src, tgt, o);
  BatchPrefetcher pf(std::move(gen), 4);
  for (int k = 0; k < 300; ++k) {
    auto b = ref.next();
    auto item = pf.next();
    REQUIRE(bool(b) == bool(item.batch));
    if (b) CHECK(b->ids == item.batch->ids);
    CHECK(item.state == ref.state());
  }
}  // the destructor stops a producer blocked on a full queue
