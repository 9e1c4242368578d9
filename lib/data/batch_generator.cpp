// Token-budget batching with length bucketing, seeded shuffles, exact resume.
// Shuffles use our own Fisher-Yates on std::mt19937_64 (std::shuffle's algorithm is unspecified), so
// the stream is the same with every standard library. Covered by tests/data/batch_generator_test.cpp.
#include "data/batch_generator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>

#include "common/error.h"

namespace moe::data {

namespace {
uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
template <class T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}
}  // namespace

std::string BatchGenerator::State::to_string() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "{\"epoch\":%lld,\"window\":%lld,\"batch\":%lld,\"seed\":%llu,\"config\":%llu}",
                (long long)epoch, (long long)window, (long long)batch, (unsigned long long)seed,
                (unsigned long long)config);
  return buf;
}

BatchGenerator::State BatchGenerator::State::from_string(const std::string& s) {
  long long e, w, b;
  unsigned long long seed, config;
  const int n = std::sscanf(s.c_str(), " {\"epoch\":%lld,\"window\":%lld,\"batch\":%lld,\"seed\":%llu,\"config\":%llu}",
                            &e, &w, &b, &seed, &config);
  MOE_CHECK(n == 5 && e >= 0 && w >= 0 && b >= 0, "BatchGenerator: cannot parse the data state '", s, "'");
  return State{e, w, b, seed, config};
}

BatchGenerator::BatchGenerator(EpochCorpora corpora, BatchOptions opts) : BatchGenerator(corpora(0), opts) {
  corpora_ = std::move(corpora);
}

BatchGenerator::BatchGenerator(std::pair<EncodedCorpus, EncodedCorpus> corpora, BatchOptions opts)
    : BatchGenerator(std::move(corpora.first), std::move(corpora.second), opts) {}

BatchGenerator::BatchGenerator(EncodedCorpus src, EncodedCorpus tgt, BatchOptions opts)
    : src_(std::move(src)), tgt_(std::move(tgt)), opts_(opts) {
  MOE_CHECK(src_.size() == tgt_.size(), "BatchGenerator: source has ", src_.size(), " sentences, target ",
            tgt_.size());
  MOE_CHECK(opts_.max_tokens > 0, "BatchGenerator: max_tokens must be positive, got ", opts_.max_tokens);
  filter();
  spdlog::info("data: {}", stats_.summary());
  MOE_CHECK(!kept_.empty(), "BatchGenerator: no sentence pairs left after filtering (", stats_.summary(), ")");
  window_ = opts_.window;
  if (window_ <= 0) {
    double total = 0;
    for (int64_t id : kept_) total += double(std::max(src_.length(id), tgt_.length(id)) + 1);
    const double mean = total / double(kept_.size());
    window_ = std::max<int64_t>(1, static_cast<int64_t>(100.0 * double(opts_.max_tokens) / mean));
  }
  uint64_t h = mix(static_cast<uint64_t>(window_) ^ mix(static_cast<uint64_t>(opts_.max_tokens)));
  h = mix(h ^ static_cast<uint64_t>(opts_.max_sentences) ^ (opts_.shuffle ? 1ull << 63 : 0));
  for (int64_t id : kept_) h = mix(h ^ (static_cast<uint64_t>(id) << 24 ^ static_cast<uint64_t>(src_.length(id)) << 12 ^
                                        static_cast<uint64_t>(tgt_.length(id))));
  config_ = h;
  state_.seed = opts_.seed;
  state_.config = config_;
}

void BatchGenerator::filter() {
  kept_.clear();
  stats_ = FilterStats{};
  for (int64_t i = 0; i < src_.size(); ++i) {
    const int64_t ls = src_.length(i), lt = tgt_.length(i);
    auto v = opts_.filter.check(ls, lt);
    if (v == LengthFilter::Verdict::keep && (ls + 1 > opts_.max_tokens || lt + 1 > opts_.max_tokens))
      v = LengthFilter::Verdict::too_long;  // cannot fit a batch on its own
    switch (v) {
      case LengthFilter::Verdict::keep:
        ++stats_.kept;
        kept_.push_back(i);
        break;
      case LengthFilter::Verdict::empty:
        ++stats_.empty;
        break;
      case LengthFilter::Verdict::too_long:
        ++stats_.too_long;
        break;
      case LengthFilter::Verdict::bad_ratio:
        ++stats_.bad_ratio;
        break;
    }
  }
}

void BatchGenerator::restore(const State& s) {
  MOE_CHECK(s.seed == opts_.seed, "BatchGenerator: the saved data state has seed ", s.seed, ", this run ", opts_.seed);
  MOE_CHECK(s.config == config_, "BatchGenerator: the saved data state was made with other data, filters or batch "
            "options (config ", s.config, ", this run ", config_, "): the batch stream cannot be resumed exactly");
  state_ = s;
  built_epoch_ = built_window_ = -1;
}

std::vector<int64_t> BatchGenerator::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order = kept_;
  if (opts_.shuffle) {
    std::mt19937_64 rng(mix(opts_.seed ^ mix(static_cast<uint64_t>(epoch))));
    shuffle(order, rng);
  }
  return order;
}

std::vector<std::vector<int64_t>> BatchGenerator::window_batches(const std::vector<int64_t>& order,
                                                                 int64_t window) const {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t lo = window * window_, hi = std::min(n, lo + window_);
  std::vector<int64_t> ids(order.begin() + lo, order.begin() + hi);
  if (opts_.shuffle)
    std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) {
      const int64_t sa = src_.length(a), sb = src_.length(b);
      return sa != sb ? sa < sb : tgt_.length(a) < tgt_.length(b);
    });
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> cur;
  int64_t ms = 0, mt = 0;
  for (int64_t id : ids) {
    const int64_t ns = std::max(ms, src_.length(id) + 1), nt = std::max(mt, tgt_.length(id) + 1);
    const auto c = static_cast<int64_t>(cur.size()) + 1;
    if (!cur.empty() && (c * ns > opts_.max_tokens || c * nt > opts_.max_tokens ||
                         (opts_.max_sentences > 0 && c > opts_.max_sentences))) {
      batches.push_back(std::move(cur));
      cur.clear();
      ms = src_.length(id) + 1;
      mt = tgt_.length(id) + 1;
    } else {
      ms = ns;
      mt = nt;
    }
    cur.push_back(id);
  }
  if (!cur.empty()) batches.push_back(std::move(cur));
  return batches;
}

int64_t BatchGenerator::batches_in_epoch(int64_t epoch) const {
  const std::vector<int64_t> order = epoch_order(epoch);
  const auto n = static_cast<int64_t>(order.size());
  int64_t batches = 0;
  for (int64_t w = 0; w * window_ < n; ++w) batches += static_cast<int64_t>(window_batches(order, w).size());
  return batches;
}

void BatchGenerator::build_epoch() {
  if (corpora_ && corpus_epoch_ != state_.epoch) {
    std::tie(src_, tgt_) = ahead_.valid() && ahead_epoch_ == state_.epoch ? ahead_.get() : corpora_(state_.epoch);
    MOE_CHECK(src_.size() == tgt_.size(), "BatchGenerator: epoch ", state_.epoch, " has ", src_.size(), " source and ",
              tgt_.size(), " target sentences");
    corpus_epoch_ = state_.epoch;
    filter();
    MOE_CHECK(!kept_.empty(), "BatchGenerator: epoch ", state_.epoch, " kept no pair (", stats_.summary(), ")");
  }
  if (corpora_ && !(ahead_.valid() && ahead_epoch_ == state_.epoch + 1)) {
    ahead_epoch_ = state_.epoch + 1;
    ahead_ = std::async(std::launch::async, corpora_, ahead_epoch_);
  }
  order_ = epoch_order(state_.epoch);
  built_epoch_ = state_.epoch;
  built_window_ = -1;
}

void BatchGenerator::build_window() {
  batches_ = window_batches(order_, state_.window);
  if (opts_.shuffle) {
    std::mt19937_64 rng(mix(opts_.seed ^ mix(static_cast<uint64_t>(state_.epoch) * 0x100000001B3ull +
                                             static_cast<uint64_t>(state_.window) + 1)));
    shuffle(batches_, rng);
  }
  built_window_ = state_.window;
}

std::optional<Batch> BatchGenerator::next() {
  while (true) {
    if (built_epoch_ != state_.epoch) build_epoch();
    const auto n = static_cast<int64_t>(kept_.size());
    if (state_.window >= (n + window_ - 1) / window_) {
      state_ = State{state_.epoch + 1, 0, 0, opts_.seed, config_};
      return std::nullopt;
    }
    if (built_window_ != state_.window) build_window();
    if (state_.batch >= static_cast<int64_t>(batches_.size())) {
      ++state_.window;
      state_.batch = 0;
      continue;
    }
    const auto& ids = batches_[static_cast<size_t>(state_.batch++)];
    std::vector<std::span<const int32_t>> s, t;
    s.reserve(ids.size());
    t.reserve(ids.size());
    for (int64_t id : ids) {
      s.push_back(src_.sentence(id));
      t.push_back(tgt_.sentence(id));
    }
    return make_batch(s, t, ids, opts_.pad_id, opts_.bos_id, opts_.eos_id);
  }
}

}  // namespace moe::data
