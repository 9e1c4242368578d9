// Dataset loading: parallel files through the caches (misalignment names both files), then one
// epoch of batches; the 1B-word test shard as an LM stream (159,658 tokens with </s>, the
// benchmark's count). Tests lib/data/dataset.cpp.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/batch_generator.h"
#include "data/dataset.h"
#include "data/vocab_builder.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

TEST_CASE("dataset: parallel files to batches", "[data]") {
  const auto dir = test::temp_dir("dataset");
  const auto s = test::write_file(dir + "/t.src", "a b\nb c a\n\nc\n");
  const auto t = test::write_gz(dir + "/t.tgt.gz", "x\ny y\nz\n\n");
  const auto sv = test::write_file(dir + "/vs.txt", "a\nb\nc\n");
  const auto tv = test::write_file(dir + "/vt.txt", "x\ny\n");
  WordVocab svoc(sv), tvoc(tv);
  auto d = load_parallel_dataset(s, t, svoc, sv, tvoc, tv);
  CHECK(d.src.size() == 4);
  CHECK(d.tgt.length(1) == 2);
  BatchOptions o;
  o.max_tokens = 100;
  BatchGenerator g(d.src, d.tgt, o);
  CHECK(g.filter_stats().empty == 2);  // line 3 (empty source) and line 4 (empty target)
  auto b = g.next();
  REQUIRE(b);
  CHECK(b->size() == 2);
  CHECK(!g.next());
  const auto t3 = test::write_file(dir + "/short.tgt", "x\n");
  CHECK_THROWS_WITH(load_parallel_dataset(s, t3, svoc, sv, tvoc, tv),
                    Contains("t.src") && Contains("has 4 lines") && Contains("short.tgt") && Contains("has 1"));
}

TEST_CASE("dataset: 1B-word test shard as an LM stream", "[data]") {
  if (!test::have_shared("1b-word-sample/news.en.heldout-00000-of-00050")) {
    WARN("no shared data: skipped");
    return;
  }
  const auto dir = test::temp_dir("dataset_lm");
  const auto text = test::shared("1b-word-sample/news.en.heldout-00000-of-00050");
  build_word_vocab({{text}, dir + "/v.txt", 3, 0});
  WordVocab v(dir + "/v.txt");
  const auto stream = load_lm_stream(text, v, dir + "/v.txt", dir);
  CHECK(stream.size() == 159658);
  CHECK(std::count(stream.begin(), stream.end(), v.eos_id()) == 6075);
  CHECK(std::count(stream.begin(), stream.end(), v.unk_id()) > 0);  // words seen < 3 times
}
