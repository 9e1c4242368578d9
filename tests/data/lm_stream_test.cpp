// LM streams: flattening with </s>, training blocks (targets shifted by one, coverage, resume) and
// evaluation windows (512/480: every token scored exactly once, context kept). Tests
// lib/data/lm_stream.cpp.
#include <catch2/catch.hpp>

#include <set>

#include "common/error.h"
#include "data/corpus.h"
#include "data/lm_stream.h"
#include "data/vocab.h"

#include <filesystem>

using namespace moe;
using namespace moe::data;

TEST_CASE("lm: flatten appends </s> per line", "[data]") {
  EncodedCorpus c({5, 6, 7}, {0, 2, 2, 3});
  CHECK(flatten_stream(c, 3) == std::vector<int32_t>{5, 6, 3, 3, 7, 3});
}

TEST_CASE("lm: training blocks cover the stream once, targets shifted", "[data]") {
  std::vector<int32_t> s(103);
  for (int i = 0; i < 103; ++i) s[i] = 100 + i;
  LmTrainStream g(s, 10, 3, 7);
  CHECK(g.blocks() == 11);  // 102 targets in blocks of 10
  std::set<int32_t> targets;
  int64_t batches = 0;
  while (auto b = g.next()) {
    ++batches;
    const auto in = b->input.to_vector<int32_t>(), tg = b->target.to_vector<int32_t>();
    const auto m = b->mask.to_vector<float>();
    const int64_t T = b->input.shape()[1];
    CHECK(T <= 10);
    for (size_t i = 0; i < in.size(); ++i) {
      if (m[i] == 0.f) continue;
      CHECK(tg[i] == in[i] + 1);
      CHECK(targets.insert(tg[i]).second);
    }
    (void)T;
  }
  CHECK(batches == 4);
  CHECK(targets.size() == 102);
  CHECK(*targets.begin() == 101);
  CHECK(g.state().epoch == 1);
  // resume mid-epoch
  LmTrainStream a(s, 10, 3, 7), r(s, 10, 3, 7);
  a.next();
  a.next();
  r.restore(LmTrainStream::State::from_string(a.state().to_string()));
  LmTrainStream other(s, 20, 3, 7);
  CHECK_THROWS_WITH(other.restore(a.state()), Catch::Matchers::Contains("tokens_per_sample"));
  for (int k = 0; k < 6; ++k) {
    auto x = a.next(), y = r.next();
    REQUIRE(bool(x) == bool(y));
    if (x) CHECK(x->ids == y->ids);
  }
}

TEST_CASE("lm: evaluation windows 512/480 score each token once", "[data]") {
  for (int64_t n : {1, 100, 512, 513, 992, 1000, 5000}) {
    const auto w = eval_windows(n, 512, 480);
    std::vector<int> scored(static_cast<size_t>(n), 0);
    for (size_t k = 0; k < w.size(); ++k) {
      CHECK(w[k].length <= 512);
      CHECK(w[k].begin + w[k].length <= n);
      if (k > 0) CHECK(w[k].score_from >= 32);  // at least 32 tokens of context
      for (int64_t t = w[k].begin + w[k].score_from; t < w[k].begin + w[k].length; ++t) ++scored[t];
    }
    CHECK(std::count(scored.begin(), scored.end(), 1) == n);
  }
  const auto w = eval_windows(1000, 512, 480);
  REQUIRE(w.size() == 3);
  CHECK((w[1].begin == 480 && w[1].length == 512 && w[1].score_from == 32));
  CHECK((w[2].begin == 488 && w[2].length == 512 && w[2].score_from == 504));
  CHECK(eval_windows(0, 512, 480).empty());
  CHECK_THROWS_WITH(eval_windows(10, 4, 5), Catch::Matchers::Contains("stride (5)"));
}

TEST_CASE("lm: evaluation batches feed </s> then the stream", "[data]") {
  std::vector<int32_t> s{10, 11, 12, 13, 14, 15, 16};
  const auto b = eval_batches(s, 4, 2, 8, 3, 0);
  REQUIRE(b.size() == 1);
  // windows: [0,4) all scored; [2,6) scores 4,5; [3,7) scores 6
  CHECK(b[0].input.to_vector<int32_t>() == std::vector<int32_t>{3, 10, 11, 12, 11, 12, 13, 14, 12, 13, 14, 15});
  CHECK(b[0].target.to_vector<int32_t>() == std::vector<int32_t>{10, 11, 12, 13, 12, 13, 14, 15, 13, 14, 15, 16});
  CHECK(b[0].mask.to_vector<float>() == std::vector<float>{1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});
  CHECK(b[0].tokens == 7);
  CHECK(eval_batches(s, 4, 2, 1, 3, 0).size() == 3);
}

TEST_CASE("lm: WikiText-103 valid through a word vocabulary, 512/480 windows", "[data]") {
  const std::string path = std::string(MOE_SHARED_DATA) + "/wikitext-103-sample/wiki.valid.tokens";
  if (!std::filesystem::exists(path)) {
    WARN("no shared data: skipped");
    return;
  }
  const auto lines = read_lines(path);
  WordVocab v(std::vector<std::string>{"the", ",", ".", "of", "@-@", "="});
  const auto stream = flatten_stream(EncodedCorpus::encode(lines, v), v.eos_id());
  CHECK(stream.size() == 217646);  // 213,886 words + one </s> per line: the benchmark's valid token count
  int64_t scored = 0;
  for (const auto& b : eval_batches(stream, 512, 480, 16, v.eos_id(), v.pad_id())) {
    CHECK(b.input.shape()[1] <= 512);
    scored += b.tokens;
  }
  CHECK(scored == static_cast<int64_t>(stream.size()));
}

TEST_CASE("lm: prefetcher yields the stream's batches and states", "[data]") {
  std::vector<int32_t> s(1000);
  for (int i = 0; i < 1000; ++i) s[i] = i % 50 + 4;
  LmTrainStream ref(s, 64, 4, 3);
  LmPrefetcher pf(std::make_unique<LmTrainStream>(s, 64, 4, 3), 2);
  for (int k = 0; k < 20; ++k) {
    auto b = ref.next();
    auto item = pf.next();
    REQUIRE(bool(b) == bool(item.batch));
    if (b) CHECK(b->ids == item.batch->ids);
    CHECK(item.state == ref.state());
  }
}
