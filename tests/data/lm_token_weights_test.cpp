// Data weighting of a language model's text (lib/data/lm_token_weights.h): the weights of each line's tokens and
// </s> laid along the token stream as flatten_stream lays the lines, a training block's target j weighing the
// stream position kL + 1 + j (so a block that crosses lines weighs each target by its own line), 0 at the padding
// of a short last block; the weights file's errors name the text's lines, not pairs.
#include "data/lm_token_weights.h"

#include <catch2/catch.hpp>

#include "data/lm_stream.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

namespace {
/// Lines of 2, 0 and 3 tokens: the stream is a a </s> </s> a a a </s> (8 tokens, ids 5 and </s> = 3).
EncodedCorpus text() { return test::corpora({{0, 2}, {0, 0}, {0, 3}}).second; }

/// The weight of every stream position, in order.
std::vector<float> along(const LmTokenWeights& w, int64_t n) {
  std::vector<float> out;
  for (int64_t p = 0; p < n; ++p) out.push_back(w.at(p));
  return out;
}
}  // namespace

TEST_CASE("LM token weights: a line's weight on its tokens and </s>, by stream position", "[data][weights][lm]") {
  const EncodedCorpus lines = text();
  const std::string dir = test::temp_dir("lm_token_weights");
  const TargetWeights sentence = TargetWeights::read(test::write_file(dir + "/s.w", "2\n0\n0.5\n"),
                                                     WeightingType::sentence, lines, WeightedLines::lm_text);
  const LmTokenWeights w(sentence, lines, 3);
  CHECK(along(w, 8) == std::vector<float>{2, 2, 2, 0, 0.5f, 0.5f, 0.5f, 0.5f});
  CHECK_THROWS_WITH(w.at(8), Contains("position 8") && Contains("8 tokens"));
  // Blocks of 3 over the 7 targets (positions 1..7): [1, 4), [4, 7) and [7, 8), the last padded to 3.
  LmTrainStream blocks(flatten_stream(lines, 3), 3, 3, 1, /*shuffle=*/false, 0);
  const LmBatch all = *blocks.next();
  REQUIRE(all.ids == std::vector<int64_t>{0, 1, 2});
  REQUIRE(all.mask.to_vector<float>() == std::vector<float>{1, 1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(w.of(all).shape() == all.mask.shape());
  CHECK(w.of(all).to_vector<float>() == std::vector<float>{2, 2, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0});

  // Word weights: one per token, </s> 1 unless given; an empty line holds only </s>'s (or nothing).
  const TargetWeights word = TargetWeights::read(test::write_file(dir + "/w.w", "1 4 7\n\n0 1 2 3\n"),
                                                 WeightingType::word, lines, WeightedLines::lm_text);
  CHECK(along(LmTokenWeights(word, lines, 3), 8) == std::vector<float>{1, 4, 7, 1, 0, 1, 2, 3});
  LmTrainStream shuffled(flatten_stream(lines, 3), 3, 3, 9, /*shuffle=*/true, 0);
  const LmBatch b = *shuffled.next();
  const std::vector<float> got = LmTokenWeights(word, lines, 3).of(b).to_vector<float>(),
                           mask = b.mask.to_vector<float>();
  const std::vector<float> stream = {1, 4, 7, 1, 0, 1, 2, 3};
  const int64_t T = b.mask.shape()[1];
  for (int64_t r = 0; r < b.size(); ++r)
    for (int64_t j = 0; j < T; ++j) {
      const auto at = static_cast<size_t>(r * T + j);
      CHECK(got[at] == (mask[at] != 0 ? stream[static_cast<size_t>(b.ids[static_cast<size_t>(r)] * 3 + 1 + j)] : 0.f));
    }
}

TEST_CASE("LM weight files: errors count the text's lines", "[data][weights][lm]") {
  const EncodedCorpus lines = text();
  const std::string path = test::temp_dir("lm_token_weights") + "/train.w";
  test::write_file(path, "1\n1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, lines, WeightedLines::lm_text),
                    Contains(path) && Contains("2 lines but there are 3 lines of data.train.text") &&
                        Contains("one line of weights per line"));
  test::write_file(path, "1 1\n1\n1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, lines, WeightedLines::lm_text),
                    Contains(path + ":1") && Contains("one per line"));
  test::write_file(path, "1 1\n1 1\n1 1\n");  // line 2 has no token: 0 or 1 weights
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::word, lines, WeightedLines::lm_text),
                    Contains(path + ":2") && Contains("2 weights for the line's 0 tokens"));
}
