// Language-model streams over one token stream (every line encoded, then </s>, as fairseq and the
// WikiText-103 / 1B-word benchmarks count it).
// Training: blocks k = [kL, kL+L) of L = tokens_per_sample; input = x[kL..], target = x[kL+1..]
// (the last block is shorter); blocks are shuffled per epoch (seed, epoch) and grouped B per batch.
// Evaluation (Baevski & Auli): the stream is preceded by </s>; windows of `context` tokens; the first
// scores all of its targets, each later one scores only its last `stride` targets, so every token is
// scored exactly once with at least context-stride tokens of history. Covered by tests/data/lm_stream_test.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/prefetcher.h"
#include "data/token_cache.h"

namespace moe::data {

/// Concatenates every line's ids, each followed by eos_id (empty lines contribute only </s>).
std::vector<int32_t> flatten_stream(const EncodedCorpus& corpus, int32_t eos_id);

class LmTrainStream {
 public:
  struct State {
    int64_t epoch = 0, position = 0;  // position = blocks consumed in this epoch
    uint64_t seed = 0;
    uint64_t config = 0;  // hash of stream length, tokens_per_sample, batch size, shuffle
    std::string to_string() const;  // {"epoch":E,"position":P,"seed":S,"config":C}
    static State from_string(const std::string& s);
    bool operator==(const State&) const = default;
  };
  LmTrainStream(std::vector<int32_t> stream, int64_t tokens_per_sample, int64_t batch_size, uint64_t seed,
                bool shuffle = true, int32_t pad_id = 0);
  /// The next batch; std::nullopt at the end of an epoch (the epoch advances).
  std::optional<LmBatch> next();
  int64_t blocks() const { return blocks_; }
  State state() const { return state_; }
  void restore(const State& s);

 private:
  void build_epoch();
  std::vector<int32_t> stream_;
  int64_t L_, B_, blocks_;
  uint64_t seed_, config_;
  bool shuffle_;
  int32_t pad_;
  std::vector<int64_t> order_;
  int64_t built_epoch_ = -1;
  State state_;
};

/// LM training blocks on a background thread (see prefetcher.h).
using LmPrefetcher = Prefetcher<LmTrainStream>;

struct EvalWindow {
  int64_t begin;        // first target position (index into the stream)
  int64_t length;       // targets in the window
  int64_t score_from;   // first scored offset inside the window
};

/// The windows over a stream of n tokens (context = window length, stride = scored per later window).
std::vector<EvalWindow> eval_windows(int64_t n, int64_t context, int64_t stride);

/// Batches of evaluation windows: input = (</s> x)[begin .. begin+length), target = x[begin ..).
std::vector<LmBatch> eval_batches(const std::vector<int32_t>& stream, int64_t context, int64_t stride,
                                  int64_t batch_size, int32_t eos_id = 3, int32_t pad_id = 0);

}  // namespace moe::data
