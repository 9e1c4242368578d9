// Data weighting's files (lib/data/target_weights.h): sentence files hold one weight a line, word files one per
// target token and optionally one for </s> (1 when absent); a wrong line count, a wrong count of weights, or a field
// that is not a finite number >= 0 names the file and line; a batch's weights sit at its rows in the batch's order,
// 0 at the padding; the mean is over every target token y </s>.
#include "data/target_weights.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

TEST_CASE("sentence weights: one per pair, repeated over its target tokens", "[data][weights]") {
  const auto [src, tgt] = test::corpora({{3, 2}, {1, 1}, {4, 3}});
  const std::string path = test::temp_dir("target_weights") + "/train.w";
  test::write_file(path, "2\n0 \n\t0.5\r\n");
  const TargetWeights w = TargetWeights::read(path, WeightingType::sentence, tgt);
  CHECK(w.lines() == 3);
  CHECK(w.of(0, 3) == std::vector<float>{2, 2, 2});
  CHECK(w.of(2, 4) == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  CHECK(w.mean() == Approx((2.0 * 3 + 0 * 2 + 0.5 * 4) / 9));
  // a batch of pairs 2 and 0 (target lengths 4 and 3 with </s>): rows in the batch's order, padding 0
  const std::vector<int32_t> a = {4, 4, 4, 4}, b = {4, 4, 4}, y2 = {5, 5, 5}, y0 = {5, 5};
  const Batch batch = make_batch({a, b}, {y2, y0}, {2, 0}, 0, 2, 3);
  CHECK(w.of(batch).shape() == Shape({2, 4}));
  CHECK(w.of(batch).to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, 2, 2, 2, 0});
  test::write_file(path, "1 1\n1\n1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, tgt),
                    Contains(path + ":1") && Contains("2 weights") && Contains("one per pair"));
  test::write_file(path, "1\n\n1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, tgt),
                    Contains(path + ":2") && Contains("0 weights"));
}

TEST_CASE("word weights: one per target token, </s> 1 unless given", "[data][weights]") {
  const auto [src, tgt] = test::corpora({{3, 2}, {1, 1}});
  const std::string path = test::write_gz(test::temp_dir("target_weights") + "/train.w.gz", "1 2\n3 4\n");
  const TargetWeights w = TargetWeights::read(path, WeightingType::word, tgt);
  CHECK(w.of(0, 3) == std::vector<float>{1, 2, 1});  // </s> takes 1
  CHECK(w.of(1, 2) == std::vector<float>{3, 4});     // </s> given
  CHECK(w.mean() == Approx((1 + 2 + 1 + 3 + 4) / 5.0));
  CHECK_THROWS_WITH(w.of(1, 3), Contains("line 2") && Contains("3 target tokens"));
  const std::string plain = test::temp_dir("target_weights") + "/train.w";
  test::write_file(plain, "1 2\n3 4 5\n");  // pair 2 has one target token: 1 or 2 weights
  CHECK_THROWS_WITH(TargetWeights::read(plain, WeightingType::word, tgt),
                    Contains(plain + ":2") && Contains("3 weights for the pair's 1 target tokens"));
}

TEST_CASE("weight files with bad fields or lines are errors naming the file and line", "[data][weights]") {
  const auto [src, tgt] = test::corpora({{3, 2}, {1, 1}});
  const std::string path = test::temp_dir("target_weights") + "/train.w";
  for (const char* bad : {"-1", "nan", "inf", "1x", "x", "1,5", "1e40"}) {
    INFO(bad);
    test::write_file(path, std::string("1\n") + bad + "\n");
    CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, tgt),
                      Contains(path + ":2") && Contains("weight 1") && Contains("not a finite number >= 0"));
  }
  test::write_file(path, "1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, tgt),
                    Contains(path) && Contains("1 lines but there are 2 training pairs"));
  test::write_file(path, "1\n1\n1\n");
  CHECK_THROWS_WITH(TargetWeights::read(path, WeightingType::sentence, tgt),
                    Contains(path + ":3") && Contains("more lines than the 2"));
  CHECK_THROWS_WITH(TargetWeights::read(path + ".missing", WeightingType::sentence, tgt), Contains(path + ".missing"));
}
