// Token-budget batching with length bucketing for translation. Per epoch the kept sentence ids are
// shuffled (seeded by (seed, epoch)); windows of `window` sentences are sorted by (src, tgt) length
// and cut into batches with B * max_len <= max_tokens on each side (padding counted, </s> and <s>
// included); the window's batches are shuffled (seeded by (seed, epoch, window)). The stream
// position is State {epoch, window, batch}: restore() regenerates exactly the same continuation.
// With EpochCorpora every epoch encodes its pairs anew (subword sampling; the next epoch's on a thread of its own
// while this one is batched) and filters them itself.
// BatchPrefetcher (prefetcher.h) runs a generator on a background thread into a bounded queue.
// Covered by tests/data/batch_generator_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/prefetcher.h"
#include "data/token_cache.h"

namespace moe::data {

struct BatchOptions {
  int64_t max_tokens = 4096;   // per side, padding included
  int64_t max_sentences = 0;   // 0 = no limit
  int64_t window = 0;          // sentences per sorting window; 0 = 100 batches' worth
  uint64_t seed = 1;
  bool shuffle = true;         // false: corpus order (validation), no batch shuffling
  LengthFilter filter;         // training filter (empty pairs are always dropped)
  int32_t pad_id = 0, bos_id = 2, eos_id = 3;
};

class BatchGenerator {
 public:
  struct State {
    int64_t epoch = 0, window = 0, batch = 0;
    uint64_t seed = 0;
    uint64_t config = 0;  // hash of the options and the kept sentences' lengths: resume needs the same
    std::string to_string() const;  // {"epoch":E,"window":W,"batch":K,"seed":S,"config":C}
    static State from_string(const std::string& s);
    bool operator==(const State&) const = default;
  };

  BatchGenerator(EncodedCorpus src, EncodedCorpus tgt, BatchOptions opts);
  /// The pairs of epoch e (0-based) as `corpora(e)` encodes them (subword sampling: data/subword_sampling.h); the
  /// same pairs every epoch, each a function of e alone. The window size and the resume check come from epoch 0,
  /// each epoch filters its own pairs.
  using EpochCorpora = std::function<std::pair<EncodedCorpus, EncodedCorpus>(int64_t epoch)>;
  BatchGenerator(EpochCorpora corpora, BatchOptions opts);
  /// The next batch of the current epoch; std::nullopt at the end of an epoch (the epoch advances).
  std::optional<Batch> next();
  State state() const { return state_; }
  /// Continue from a saved state (seed and config must match: same data, filter and budget).
  void restore(const State& s);
  const FilterStats& filter_stats() const { return stats_; }
  int64_t kept() const { return static_cast<int64_t>(kept_.size()); }
  int64_t window_size() const { return window_; }
  /// The number of batches of epoch `epoch` (0-based), without making them (epochs differ by a few
  /// batches: each cuts its own windows; with EpochCorpora, counted over the epoch built last).
  int64_t batches_in_epoch(int64_t epoch) const;

 private:
  BatchGenerator(std::pair<EncodedCorpus, EncodedCorpus> corpora, BatchOptions opts);
  /// This epoch's order of the kept ids (shuffled by (seed, epoch)).
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  /// The batches (sentence ids) of window `window` of an epoch whose order is `order`, unshuffled.
  std::vector<std::vector<int64_t>> window_batches(const std::vector<int64_t>& order, int64_t window) const;
  /// Filters src_ and tgt_ into kept_ (and stats_).
  void filter();
  void build_epoch();
  void build_window();
  EncodedCorpus src_, tgt_;
  EpochCorpora corpora_;  // set: src_ and tgt_ are those of epoch corpus_epoch_
  int64_t corpus_epoch_ = 0;
  std::future<std::pair<EncodedCorpus, EncodedCorpus>> ahead_;  // epoch ahead_epoch_'s, made meanwhile
  int64_t ahead_epoch_ = -1;
  BatchOptions opts_;
  FilterStats stats_;
  std::vector<int64_t> kept_;                        // sentence ids passing the filter
  std::vector<int64_t> order_;                       // this epoch's order
  std::vector<std::vector<int64_t>> batches_;        // the current window's batches
  int64_t window_ = 0, built_epoch_ = -1, built_window_ = -1;
  uint64_t config_ = 0;
  State state_;
};

/// The generator on a background thread (see prefetcher.h).
using BatchPrefetcher = Prefetcher<BatchGenerator>;

}  // namespace moe::data
