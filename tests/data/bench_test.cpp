// Data throughput on real data: the batch generator with its prefetch thread on Multi30k, encoded
// with a word vocabulary built from it (the tokens/s figure is recorded in docs/PERF.md by
// `moe-vocab bench`). The check is a floor far below the 1M tokens/s target so a slow CI box
// passes; the printed figure is the measurement. Tests lib/data/bench.cpp.
#include "data/bench.h"

#include <catch2/catch.hpp>
#include <iostream>

#include "data/vocab_builder.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;

TEST_CASE("bench: batch generator throughput on Multi30k", "[data][bench]") {
  if (!test::have_shared("multi30k/train.en")) {
    WARN("no shared data: skipped");
    return;
  }
  const auto dir = test::temp_dir("bench");
  build_word_vocab({{test::shared("multi30k/train.en"), test::shared("multi30k/train.de")}, dir + "/v.txt", 1, 0});
  const auto r = bench_generator(test::shared("multi30k/train.en"), test::shared("multi30k/train.de"), dir + "/v.txt",
                                 4096, 1.0, dir);
  std::cout << "data throughput: " << r.summary() << "\n";
  CHECK(r.batches > 0);
  CHECK(r.tokens_per_s() > 1e5);
}
