// Word alignments for guided-alignment training (lib/data/word_alignments.h): links parse as fast_align and Marian
// write them (with optional weights) and malformed ones are errors saying which; a file is read line by line
// against the pairs' token counts (a wrong line count or a link past its pair's tokens names the file and line);
// a batch's guidance matrix puts each target row's normalised link weights at the batch row of its pair, in the
// batch's order, with zero rows for unlinked targets and the padding.
#include "data/word_alignments.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

TEST_CASE("word links parse as fast_align and Marian write them", "[data][alignment]") {
  CHECK(parse_word_links("0-0 2-1  1-3\r") == std::vector<WordLink>{{0, 0}, {2, 1}, {1, 3}});
  CHECK(parse_word_links("3-4:0.5\t0-1:1") == std::vector<WordLink>{{3, 4, 0.5f}, {0, 1, 1.f}});
  CHECK(parse_word_links("").empty());
  CHECK(format_word_links({{0, 0}, {2, 1}, {1, 3}}) == "0-0 2-1 1-3");  // what the parser reads back
  CHECK(format_word_links({}).empty());
  CHECK(parse_word_links("  ").empty());
  for (const char* bad : {"0-", "-1", "a-1", "1-b", "1-2-3", "-1-2", "1-2:0", "1-2:1.5", "1-2:", "12", "1-2:x"})
    CHECK_THROWS_WITH(parse_word_links(std::string("0-0 ") + bad), Contains("link 2") && Contains(bad));
}

TEST_CASE("an alignment file is read against its pairs' tokens", "[data][alignment]") {
  const auto [src, tgt] = test::corpora({{3, 2}, {1, 1}, {4, 5}});
  const std::string dir = test::temp_dir("word_alignments");
  const std::string path = dir + "/train.align";
  test::write_file(path, "0-0 2-1\n\n3-4 0-0:0.5\n");
  const WordAlignments a = WordAlignments::read(path, src, tgt);
  CHECK(a.lines() == 3);
  CHECK(a.links() == 4);
  CHECK(a.of(0) == std::vector<WordLink>{{0, 0}, {2, 1}});
  CHECK(a.of(1).empty());
  CHECK(a.of(2) == std::vector<WordLink>{{3, 4}, {0, 0, 0.5f}});
  test::write_file(path, "0-0\n0-0\n");
  CHECK_THROWS_WITH(WordAlignments::read(path, src, tgt), Contains(path) && Contains("2 lines") && Contains("3"));
  test::write_file(path, "0-0\n0-0\n0-0\n0-0\n");
  CHECK_THROWS_WITH(WordAlignments::read(path, src, tgt), Contains(path + ":4") && Contains("more lines"));
  test::write_file(path, "0-0\n1-0\n0-0\n");  // pair 2 has one source token
  CHECK_THROWS_WITH(WordAlignments::read(path, src, tgt),
                    Contains(path + ":2") && Contains("link 1-0") && Contains("1 source and 1 target tokens"));
  test::write_file(path, "0-0\n0-0\n0-0 x\n");
  CHECK_THROWS_WITH(WordAlignments::read(path, src, tgt), Contains(path + ":3") && Contains("link 2 'x'"));
  CHECK_THROWS_WITH(WordAlignments({{{0, 2}}, {}, {}}, src, tgt), Contains("pair 1") && Contains("link 0-2"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a batch's guidance: its pairs' links, rows normalised", "[data][alignment]") {
  const auto [src, tgt] = test::corpora({{3, 2}, {1, 1}, {4, 3}});
  const WordAlignments a({{{0, 0}, {2, 1}, {1, 1, 0.5f}}, {}, {{3, 2}, {0, 0, 0.25f}, {1, 0, 0.75f}}}, src, tgt);
  // A batch of pairs 2 and 0, in that order: S = 4 + 1, T = 3 + 1 (with </s> and <s>).
  const std::vector<int32_t> s2(4, 4), t2(3, 5), s0(3, 4), t0(2, 5);
  const Batch batch = make_batch({s2, s0}, {t2, t0}, {2, 0}, 0, 1, 2);
  const Tensor g = a.guidance(batch);
  REQUIRE(g.shape() == Shape{2, 4, 5});
  const std::vector<float> v = g.to_vector<float>();
  auto at = [&](int b, int t, int s) { return v[static_cast<size_t>((b * 4 + t) * 5 + s)]; };
  std::vector<float> want(v.size(), 0.f);
  auto set = [&](int b, int t, int s, float w) { want[static_cast<size_t>((b * 4 + t) * 5 + s)] = w; };
  set(0, 2, 3, 1.f);  // pair 2: target 2 <- source 3; target 0 <- sources 0 and 1 (0.25 : 0.75)
  set(0, 0, 0, 0.25f);
  set(0, 0, 1, 0.75f);
  set(1, 0, 0, 1.f);  // pair 0: target 0 <- source 0; target 1 <- sources 2 and 1 (1 : 0.5)
  set(1, 1, 2, 1.f / 1.5f);
  set(1, 1, 1, 0.5f / 1.5f);
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == Approx(want[i]));
  CHECK(at(0, 1, 0) == 0.f);  // an unlinked target row stays zero
  const Batch empty_links = make_batch({std::vector<int32_t>(1, 4)}, {std::vector<int32_t>(1, 5)}, {1}, 0, 1, 2);
  for (float x : a.guidance(empty_links).to_vector<float>()) CHECK(x == 0.f);
}
