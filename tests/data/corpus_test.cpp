// Corpus reading: plain/gzip, CRLF, misaligned files, invalid UTF-8 (error and skip modes),
// empty lines, and the length/ratio filter. Tests lib/data/corpus.cpp and lib/data/utf8.cpp.
#include "data/corpus.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/utf8.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

TEST_CASE("utf8: valid and invalid sequences", "[data]") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii text, long enough for the fast path"));
  CHECK(is_valid_utf8("Grüße \xC2\xA0 € 𝄞"));
  CHECK(find_invalid_utf8("abc\xFF") == 3);
  CHECK(find_invalid_utf8("abcdefghij\xC3") == 10);    // truncated 2-byte
  CHECK(find_invalid_utf8("\xC0\xAF") == 0);           // overlong '/'
  CHECK(find_invalid_utf8("ab\xE0\x80\xAF") == 2);     // overlong 3-byte
  CHECK(find_invalid_utf8("\xED\xA0\x80") == 0);       // surrogate U+D800
  CHECK(find_invalid_utf8("x\xF4\x90\x80\x80") == 1);  // > U+10FFFF
  CHECK(find_invalid_utf8("\xE2\x82") == 0);           // truncated euro
  CHECK(find_invalid_utf8("\xE2\x82\x41") == 0);       // bad continuation
}

TEST_CASE("utf8: invalid bytes become U+FFFD, valid text is untouched", "[data]") {
  std::string s = "Grüße € 𝄞";
  CHECK(replace_invalid_utf8(s) == 0);
  CHECK(s == "Grüße € 𝄞");
  s = "a\xFF b\xE2\x82 \xC3\xA9\xC0\xAF end";  // stray byte, truncated euro, é, overlong '/'
  CHECK(replace_invalid_utf8(s) == 5);
  CHECK(s == "a\uFFFD b\uFFFD\uFFFD \u00E9\uFFFD\uFFFD end");
  CHECK(is_valid_utf8(s));
  s = "\x80";
  CHECK(replace_invalid_utf8(s) == 1);
  CHECK(s == "\uFFFD");
}

TEST_CASE("corpus: plain and gzip, CRLF, long lines", "[data]") {
  const auto dir = test::temp_dir("corpus");
  std::string longline(200000, 'a');
  const std::string text = "one\r\ntwo\n\n" + longline + "\nlast without newline";
  auto plain = read_lines(test::write_file(dir + "/a.txt", text));
  auto gz = read_lines(test::write_gz(dir + "/a.txt.gz", text));
  REQUIRE(plain.size() == 5);
  CHECK(plain[0] == "one");
  CHECK(plain[1] == "two");
  CHECK(plain[2].empty());
  CHECK(plain[3] == longline);
  CHECK(plain[4] == "last without newline");
  CHECK(gz == plain);
  CHECK(read_lines(test::write_file(dir + "/empty.txt", "")).empty());
  CHECK(read_lines(test::write_file(dir + "/nl.txt", "\n")) == std::vector<std::string>{""});
  const std::string nul("a\0b\nc\n", 6);  // a NUL byte must not merge lines
  auto n = read_lines(test::write_file(dir + "/nul.txt", nul));
  REQUIRE(n.size() == 2);
  CHECK(n[0] == std::string("a\0b", 3));
  CHECK(n[1] == "c");
  CHECK_THROWS_WITH(read_lines(dir + "/missing.txt"), Contains("missing.txt"));
}

TEST_CASE("corpus: misaligned parallel files name both files and counts", "[data]") {
  const auto dir = test::temp_dir("align");
  const auto s = test::write_file(dir + "/x.src", "a\nb\nc\n");
  const auto t = test::write_gz(dir + "/x.tgt.gz", "A\nB\n");
  CHECK_THROWS_WITH(read_parallel(s, t),
                    Contains("x.src") && Contains("has 3 lines") && Contains("x.tgt.gz") && Contains("has 2"));
  CHECK_THROWS_WITH(check_aligned(s, t), Contains("x.src") && Contains("x.tgt.gz"));
  const auto t3 = test::write_file(dir + "/y.tgt", "A\nB\nC\n");
  CHECK(check_aligned(s, t3) == 3);
  const auto p = read_parallel(s, t3);
  CHECK(p.tgt[2] == "C");
}

TEST_CASE("corpus: invalid UTF-8 is an error naming file and line, or skipped and counted", "[data]") {
  const auto dir = test::temp_dir("utf8");
  const auto f = test::write_file(dir + "/bad.de", "gut\nschl\xE9\x63ht\nauch gut\n");
  CHECK_THROWS_WITH(read_lines(f), Contains("bad.de") && Contains("line 2") && Contains("invalid UTF-8"));
  ReadStats st;
  ReadOptions o;
  o.skip_invalid_utf8 = true;
  auto lines = read_lines(f, o, &st);
  REQUIRE(lines.size() == 3);  // kept in place (empty) so a parallel file stays aligned
  CHECK(lines[1].empty());
  CHECK(lines[2] == "auch gut");
  CHECK(st.invalid_utf8 == 1);
  CHECK(st.empty == 1);
  CHECK(st.lines == 3);
}

TEST_CASE("corpus: length filter (empty, max length per side, ratio)", "[data]") {
  LengthFilter f;
  f.max_src_len = 10;
  f.max_tgt_len = 8;
  f.max_ratio = 2.0;
  using V = LengthFilter::Verdict;
  CHECK(f.check(5, 5) == V::keep);
  CHECK(f.check(0, 5) == V::empty);
  CHECK(f.check(5, 0) == V::empty);
  CHECK(f.check(10, 8) == V::keep);
  CHECK(f.check(11, 8) == V::too_long);
  CHECK(f.check(8, 9) == V::too_long);
  CHECK(f.check(8, 4) == V::keep);  // ratio exactly 2
  CHECK(f.check(9, 4) == V::bad_ratio);
  CHECK(f.check(2, 5) == V::bad_ratio);
  LengthFilter none;
  CHECK(none.check(1000, 1) == V::keep);
  FilterStats s{3, 1, 2, 4};
  CHECK(s.summary() == "kept 3 of 10 pairs; skipped 1 empty, 2 over the length limit, 4 over the ratio limit");
}

TEST_CASE("corpus: the blank-separated fields of a line, and whole-field numbers", "[data]") {
  using V = std::vector<std::string_view>;
  CHECK(blank_fields(" a\tbb  c\r") == V{"a", "bb", "c"});
  CHECK(blank_fields("").empty());
  CHECK(blank_fields(" \t\r").empty());
  float x = 0;
  CHECK((parse_number(std::string_view("1.5"), x) && x == 1.5f));
  CHECK_FALSE(parse_number(std::string_view("1.5x"), x));
  CHECK_FALSE(parse_number(std::string_view(""), x));
}
