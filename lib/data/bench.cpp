// Data-path benchmark (see bench.h). Covered by tests/data/bench_test.cpp.
#include "data/bench.h"

#include <chrono>
#include <cstdio>

#include "data/batch_generator.h"
#include "data/token_cache.h"
#include "data/vocab.h"

namespace moe::data {

std::string BenchResult::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%lld batches, %lld tokens (%.1f%% padding) in %.2f s: %.0f batches/s, %.3g tokens/s; %lld epochs; "
                "load+encode %.2f s",
                (long long)batches, (long long)tokens,
                padded_tokens ? 100.0 * double(padded_tokens - tokens) / double(padded_tokens) : 0.0, seconds,
                batches_per_s(), tokens_per_s(), (long long)epochs, load_seconds);
  return buf;
}

BenchResult bench_generator(const std::string& src, const std::string& tgt, const std::string& vocab_path,
                            int64_t max_tokens, double seconds, const std::string& cache_dir) {
  using clock = std::chrono::steady_clock;
  BenchResult r;
  const auto t0 = clock::now();
  const auto vocab = load_vocab(vocab_path);
  check_aligned(src, tgt);
  auto s = load_or_build_cache(src, *vocab, vocab_path, cache_dir);
  auto t = load_or_build_cache(tgt, *vocab, vocab_path, cache_dir);
  BatchOptions o;
  o.max_tokens = max_tokens;
  o.pad_id = vocab->pad_id();
  o.bos_id = vocab->bos_id();
  o.eos_id = vocab->eos_id();
  BatchPrefetcher pf(std::make_unique<BatchGenerator>(std::move(s), std::move(t), o), 16);
  const auto t1 = clock::now();
  r.load_seconds = std::chrono::duration<double>(t1 - t0).count();
  while (std::chrono::duration<double>(clock::now() - t1).count() < seconds) {
    auto item = pf.next();
    if (!item.batch) {
      ++r.epochs;
      continue;
    }
    ++r.batches;
    r.tokens += item.batch->src_tokens + item.batch->tgt_tokens;
    r.padded_tokens += item.batch->src.numel() + item.batch->tgt_out.numel();
  }
  r.seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return r;
}

}  // namespace moe::data
