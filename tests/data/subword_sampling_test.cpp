// Subword sampling (lib/data/subword_sampling.h) with BPE and unigram vocabularies trained on Multi30k: the same seed
// gives the same segmentations, also from two threads at once, another seed other ones; every sampled line decodes to
// the text of its one best segmentation; BPE-dropout makes lines longer on average, a larger alpha more so; a word
// vocabulary is an error.
#include "data/subword_sampling.h"

#include <catch2/catch.hpp>
#include <thread>

#include "common/error.h"
#include "data/corpus.h"
#include "data/vocab_builder.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

namespace {
bool same(const EncodedCorpus& a, const EncodedCorpus& b) {
  if (a.size() != b.size()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    const auto x = a.sentence(i), y = b.sentence(i);
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("subword sampling: seeded segmentations of the same text", "[data][spm]") {
  if (!test::have_shared("multi30k/train.en")) {
    WARN("no shared data: skipped");
    return;
  }
  const auto dir = test::temp_dir("subword_sampling");
  std::vector<std::string> lines = read_lines(test::shared("multi30k/val.en"));
  lines.resize(300);
  for (const std::string type : {"bpe", "unigram"}) {
    INFO(type);
    SpmTrainOptions o;
    o.inputs = {test::shared("multi30k/train.en")};
    o.output = dir + "/en." + type + ".spm";
    o.vocab_size = 1000;
    o.model_type = type;
    o.input_sentence_size = 5000;
    train_sentencepiece(o);
    const SentencePieceVocab v(o.output);
    const SubwordSampling s{.alpha = 0.1, .nbest = -1};
    const EncodedCorpus a = sample_encode(lines, v, s, 7), best = EncodedCorpus::encode(lines, v);
    CHECK(same(a, sample_encode(lines, v, s, 7)));
    EncodedCorpus t1, t2;  // two threads at once: one pass at a time, each its own seed's
    std::thread x([&] { t1 = sample_encode(lines, v, s, 7); }), y([&] { t2 = sample_encode(lines, v, s, 8); });
    x.join();
    y.join();
    CHECK(same(a, t1));
    const EncodedCorpus b = sample_encode(lines, v, s, 8);
    CHECK(same(b, t2));
    int64_t differ = 0, from_best = 0;
    for (int64_t i = 0; i < a.size(); ++i) {
      const auto ai = a.sentence(i), bi = b.sentence(i), ci = best.sentence(i);
      differ += !std::equal(ai.begin(), ai.end(), bi.begin(), bi.end());
      from_best += !std::equal(ai.begin(), ai.end(), ci.begin(), ci.end());
      CHECK(v.decode({ai.begin(), ai.end()}) == v.decode({ci.begin(), ci.end()}));
    }
    CHECK(differ > 100);  // of 300 lines of 10-15 words
    CHECK(from_best > 100);
    if (type == "bpe") {  // dropped merges leave more, shorter pieces
      const EncodedCorpus more = sample_encode(lines, v, SubwordSampling{.alpha = 0.3}, 7);
      CHECK(best.tokens() < a.tokens());
      CHECK(a.tokens() < more.tokens());
    }
  }
  const WordVocab words(std::vector<std::string>{"a", "b"});
  CHECK_THROWS_WITH(sample_encode(lines, words, SubwordSampling{.alpha = 0.1}, 1), Contains("SentencePiece"));
}
