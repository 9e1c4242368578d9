// InputLines (lib/translator/input_lines.h): one line to translate per input line, in chunks, CRLF
// and invalid UTF-8 handled, the warning naming the input and the first bad lines.
#include "translator/input_lines.h"

#include <catch2/catch.hpp>
#include <sstream>

using moe::InputLines;

TEST_CASE("input lines: chunks keep every line, empty and unterminated ones too") {
  std::istringstream in("one\n\nthree\r\nfour");
  InputLines input(in, "in.txt");
  std::vector<std::string> chunk;
  REQUIRE(input.next_chunk(3, chunk));
  CHECK(chunk == std::vector<std::string>{"one", "", "three"});
  REQUIRE(input.next_chunk(3, chunk));
  CHECK(chunk == std::vector<std::string>{"four"});
  CHECK_FALSE(input.next_chunk(3, chunk));
  CHECK(chunk.empty());
  CHECK(input.lines() == 4);
  CHECK(input.warning().empty());
}

TEST_CASE("input lines: invalid UTF-8 becomes U+FFFD and the warning names the input and lines") {
  std::string text;
  for (int i = 1; i <= 8; ++i) text += (i % 2 == 0 ? std::string("bad \xff byte") : std::string("good")) + "\n";
  std::istringstream in(text);
  InputLines input(in, "-");
  std::vector<std::string> chunk;
  REQUIRE(input.next_chunk(100, chunk));
  REQUIRE(chunk.size() == 8);
  CHECK(chunk[1] == "bad \xEF\xBF\xBD byte");
  CHECK(input.invalid_utf8() == 4);
  CHECK(input.warning() ==
        "4 input line(s) of '-' were not valid UTF-8 (line 2 4 6 8); their invalid bytes were translated as U+FFFD");
}
