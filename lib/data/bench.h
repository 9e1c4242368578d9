// Data-path throughput benchmark: encodes a parallel corpus (through the token cache), then pulls
// batches through BatchPrefetcher for a fixed time, counting batches and padded/real tokens per
// second. Used by `moe-vocab bench` and tests/data/bench_test.cpp; figures go in docs/PERF.md.
#pragma once
#include <cstdint>
#include <string>

namespace moe::data {

struct BenchResult {
  int64_t batches = 0, tokens = 0, padded_tokens = 0, epochs = 0;
  double seconds = 0, load_seconds = 0;
  double batches_per_s() const { return seconds > 0 ? double(batches) / seconds : 0; }
  double tokens_per_s() const { return seconds > 0 ? double(tokens) / seconds : 0; }
  std::string summary() const;
};

/// Runs the generator (prefetch thread, queue of 16) for `seconds`; tokens = source + target tokens.
BenchResult bench_generator(const std::string& src, const std::string& tgt, const std::string& vocab_path,
                            int64_t max_tokens, double seconds, const std::string& cache_dir = "");

}  // namespace moe::data
