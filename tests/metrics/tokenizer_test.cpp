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
