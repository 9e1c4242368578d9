// Tokenizer and text-helper tests: 13a, intl, char, none, compound splitting, Python-compatible
// whitespace splitting and lowercasing, Unicode categories. Expected strings are hand-derived
// from sacreBLEU's regular expressions (lib/metrics/tokenizer_13a.cpp, tokenizer_intl.cpp).
#include <catch2/catch.hpp>

#include "common/error.h"
#include "metrics/text.h"
#include "metrics/tokenizer.h"
#include "metrics/unicode_tables.h"

using namespace moe::metrics;

TEST_CASE("13a tokenizer", "[metrics][tokenizer]") {
  CHECK(tokenize_13a("Hello, world!") == "Hello , world !");
  CHECK(tokenize_13a("It wasn't surprising.") == "It wasn't surprising .");
  CHECK(tokenize_13a("Pi is 3.14, or 3,14 in 2019.") == "Pi is 3.14 , or 3,14 in 2019 .");
  CHECK(tokenize_13a("&quot;hi&quot; &amp; &lt;b&gt;") == "\" hi \" & < b >");
  CHECK(tokenize_13a("pages 5-6 of a well-known book") == "pages 5 - 6 of a well-known book");
  CHECK(tokenize_13a("a<skipped>b") == "ab");
  CHECK(tokenize_13a("(x) [y] {z} $5 @me #t") == "( x ) [ y ] { z } $ 5 @ me # t");
  CHECK(tokenize_13a("end...") == "end . . .");
  CHECK(tokenize_13a("") == "");
  CHECK(tokenize_13a("   ") == "");
  // U+00A0 (non-breaking space) separates tokens, as Python's str.split() does.
  CHECK(tokenize_13a("a\xc2\xa0" "b") == "a b");
  // Non-ASCII letters next to punctuation.
  CHECK(tokenize_13a("Grüße.") == "Grüße .");
}

TEST_CASE("intl tokenizer", "[metrics][tokenizer]") {
  CHECK(tokenize_intl("Hello, world!") == "Hello , world !");
  CHECK(tokenize_intl("1,000.5 euros") == "1,000.5 euros");
  CHECK(tokenize_intl("a$b") == "a $ b");
  CHECK(tokenize_intl("\xc2\xab" "Hallo\xc2\xbb") == "\xc2\xab Hallo \xc2\xbb");  // «Hallo»
  // The mteval-v14 quirk: a number followed by the final period keeps it.
  CHECK(tokenize_intl("in 2019.") == "in 2019.");
  CHECK(tokenize_intl("It wasn't") == "It wasn ' t");
  CHECK(tokenize_intl("") == "");
}

TEST_CASE("zh tokenizer", "[metrics][tokenizer]") {
  // Expected strings: sacreBLEU's TokenizerZh logic run in Python on the same inputs.
  CHECK(tokenize_zh("\u6211\u7231\u5317\u4eac\u3002") == "\u6211 \u7231 \u5317 \u4eac \u3002");
  CHECK(tokenize_zh("\u4ed6\u8bf4\uff1a\u201c\u4f60\u597d\uff0cworld!\u201d 3.5\u5143") ==
        "\u4ed6 \u8bf4 \uff1a \u201c \u4f60 \u597d \uff0c world ! \u201d 3.5 \u5143");
  CHECK(tokenize_zh(" \u4ef7\u683c\u662f1,000.50\u7f8e\u5143\u2014\u4fbf\u5b9c ") ==
        "\u4ef7 \u683c \u662f 1,000.50 \u7f8e \u5143 \u2014 \u4fbf \u5b9c");
  CHECK(tokenize_zh(".\u5f00\u5934") == ". \u5f00 \u5934");
  // The U+2001..U+2A6D quirk: em dash, euro sign and arrows count as "Chinese".
  CHECK(tokenize_zh("a\u2014b \u20ac5 \u2190x") == "a \u2014 b \u20ac 5 \u2190 x");
  CHECK(tokenize_zh("a\u2000b") == "a b");  // U+2000 is whitespace, not in the ranges
  CHECK(make_tokenizer("zh")("\u4e2d\u6587") == "\u4e2d \u6587");
}

TEST_CASE("char and none tokenizers, registry", "[metrics][tokenizer]") {
  CHECK(tokenize_char("ab c") == "a b   c");
  CHECK(tokenize_char("\xc3\xa4" "b") == "\xc3\xa4 b");
  CHECK(tokenize_none(" a  b ") == " a  b ");
  CHECK(make_tokenizer("13a")("a,b") == "a , b");
  try {
    make_tokenizer("spm");
    FAIL("expected an error");
  } catch (const moe::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown tokenizer 'spm'") && Catch::Contains("13a"));
  }
}

TEST_CASE("compound splitting as perl s{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g", "[metrics][tokenizer]") {
  CHECK(compound_split("well-known x - y") == "well ##AT##-##AT## known x - y");
  CHECK(compound_split("a-b-c") == "a ##AT##-##AT## b-c");  // non-overlapping, as perl
  CHECK(compound_split("-a b-") == "-a b-");
  CHECK(compound_split("") == "");
}

TEST_CASE("Python-compatible text helpers", "[metrics][text]") {
  CHECK(py_split(" a\tb\n c ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(py_split("a\xe3\x80\x80" "b") == std::vector<std::string>{"a", "b"});  // U+3000
  CHECK(py_split("").empty());
  CHECK(py_rstrip("ab \t\n") == "ab");
  CHECK(py_rstrip("ab\xc2\xa0") == "ab");
  CHECK(py_lower("ABC def") == "abc def");
  CHECK(py_lower("\xc3\x84\xc3\x96\xc3\x9c") == "\xc3\xa4\xc3\xb6\xc3\xbc");  // ÄÖÜ -> äöü
  CHECK(py_lower("\xc4\xb0") == "i\xcc\x87");                                  // İ -> i + U+0307
  // Python's final-sigma rule: "ΟΔΟΣ ΣΑ" -> "οδος σα".
  CHECK(py_lower("\u039f\u0394\u039f\u03a3 \u03a3\u0391") == "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03b1");
  CHECK(utf8_encode(utf8_decode("a\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80")) == "a\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80");
  CHECK(utf8_decode("\xff").front() == 0xFFFD);
}

TEST_CASE("Unicode general categories", "[metrics][text]") {
  CHECK(is_unicode_punct(U','));
  CHECK(is_unicode_punct(U'\u00AB'));
  CHECK_FALSE(is_unicode_punct(U'$'));
  CHECK(is_unicode_symbol(U'$'));
  CHECK(is_unicode_symbol(U'\u20AC'));
  CHECK(is_unicode_number(U'7'));
  CHECK(is_unicode_number(U'\u0663'));  // ARABIC-INDIC DIGIT THREE
  CHECK_FALSE(is_unicode_number(U'a'));
  CHECK_FALSE(is_unicode_symbol(U'a'));
}
