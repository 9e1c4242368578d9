// chrF tests ported from sacreBLEU's test_chrf.py (expected values transcribed; beta = 3 there),
// plus hand-computed statistics, chrF++ word splitting, multi-reference choice and signatures.
#include <catch2/catch.hpp>
#include <cmath>

#include "metrics/chrf.h"

using namespace moe::metrics;

namespace {
double corpus_chrf(const std::string& hyp, const std::string& ref, bool eps, bool whitespace = false) {
  ChrfOptions o;
  o.beta = 3;
  o.eps_smoothing = eps;
  o.whitespace = whitespace;
  return Chrf(o).corpus_score({hyp}, {{ref}}).score;
}
}  // namespace

TEST_CASE("test_chrf.py: eps smoothing cases (beta 3)", "[metrics][chrf]") {
  struct Case { const char* hyp; const char* ref; double expected; };
  const Case cases[] = {
      {"abcdefg", "hijklmnop", 0.0}, {"a", "b", 0.0}, {"", "b", 0.0}, {"", "ref", 0.0}, {"", "reference", 0.0},
      {"aa", "ab", 8.3333}, {"a", "a", 16.6667}, {"a b c", "a b c", 50.0}, {"a b c", "abc", 50.0},
      {" risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
       "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
       63.361730},
      {" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. ",
       "Das Verh\xc3\xa4ltnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.", 64.1302698},
      {"Niemand hat die Absicht, eine Mauer zu errichten", "Niemand hat die Absicht, eine Mauer zu errichten", 100.0}};
  for (const Case& c : cases) {
    INFO(c.hyp << " | " << c.ref);
    CHECK(std::abs(corpus_chrf(c.hyp, c.ref, true) - c.expected) < 1e-4);
  }
  ChrfOptions o;
  o.beta = 3;
  o.eps_smoothing = true;
  CHECK(std::abs(Chrf(o).corpus_score({"a", "b"}, {{"a", "c"}}).score - 8.3333) < 1e-4);
}

TEST_CASE("test_chrf.py: effective order (sacreBLEU < 2 mode)", "[metrics][chrf]") {
  CHECK(std::abs(corpus_chrf("a", "a", false) - 100.0) < 1e-4);
  CHECK(corpus_chrf("", "reference", false) == 0.0);
  CHECK(std::abs(corpus_chrf("a b c", "a b c", false) - 100.0) < 1e-4);
  CHECK(std::abs(corpus_chrf("a b c", "abc", false) - 100.0) < 1e-4);
  CHECK(corpus_chrf("", "c", false) == 0.0);
  CHECK(std::abs(corpus_chrf("aa", "ab", false) - 25.0) < 1e-4);
  ChrfOptions o;
  o.beta = 3;
  CHECK(std::abs(Chrf(o).corpus_score({"a", "b"}, {{"a", "c"}}).score - 50.0) < 1e-4);
}

TEST_CASE("test_chrf.py: keep whitespace", "[metrics][chrf]") {
  CHECK(std::abs(corpus_chrf("Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich.",
                             "Das Verh\xc3\xa4ltnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.",
                             false, true) - 67.3481606) < 1e-4);
  CHECK(std::abs(corpus_chrf("risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
                             "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
                             false, true) - 65.2414427) < 1e-4);
}

TEST_CASE("test_chrf.py: sentence-level chrF (beta 2, eps smoothing)", "[metrics][chrf]") {
  ChrfOptions o;
  o.eps_smoothing = true;
  Chrf chrf(o);
  CHECK(std::abs(chrf.sentence_score("Co n\xc3\xa1s nejv\xc3\xad" "c tr\xc3\xa1p\xc3\xad, proto\xc5\xbe" "e l\xc3\xa9ka\xc5\x99i si vyb\xc3\xadraj\xc3\xad, kdo bude \xc5\xbe\xc3\xadt a kdo zem\xc5\x99" "e.",
                                     {"Nejv\xc3\xad" "ce smutn\xc3\xad jsme z toho, \xc5\xbe" "e mus\xc3\xad" "me rozhodovat o tom, kdo bude \xc5\xbe\xc3\xadt a kdo zem\xc5\x99" "e."})
                     .score - 39.14078509) < 1e-4);
  CHECK(std::abs(chrf.sentence_score("Nebo prost\xc4\x9b nemaj\xc3\xad vybaven\xc3\xad, kter\xc3\xa9 by jim pomohlo, uvedli l\xc3\xa9ka\xc5\x99i.",
                                     {"A n\xc4\x9bkdy nem\xc3\xa1me ani pot\xc5\x99" "ebn\xc3\xbd materi\xc3\xa1l, abychom jim pomohli, popsali l\xc3\xa9ka\xc5\x99i."})
                     .score - 31.22557079) < 1e-4);
  CHECK(std::abs(chrf.sentence_score("Lapali po dechu, jejich \xc5\xbeivoty skon\xc4\x8dily d\xc5\x99\xc3\xadv, ne\xc5\xbe skute\xc4\x8dn\xc4\x9b za\xc4\x8d" "aly.",
                                     {"Lapali po dechu a pak jejich \xc5\xbeivot skon\xc4\x8dil - d\xc5\x99\xc3\xadv, ne\xc5\xbe skute\xc4\x8dn\xc4\x9b mohl za\xc4\x8d\xc3\xadt, p\xc5\x99ipomn\xc4\x9bli."})
                     .score - 57.15704367) < 1e-4);
}

TEST_CASE("chrF hand-computed statistics and chrF++ words", "[metrics][chrf]") {
  ChrfOptions o;
  o.char_order = 2;
  o.word_order = 1;
  Chrf chrf(o);
  // chars (whitespace removed): hyp "abab" ref "abc"; words: hyp [ab, ab] ref [a, bc].
  auto st = chrf.segment_stats("ab ab", {"a bc"});
  CHECK(st == std::vector<int64_t>{4, 3, 2, 3, 2, 1, 2, 2, 0});
  CHECK(chrf_words("(hi) there, x !") == std::vector<std::string>{"(hi", ")", "there", ",", "x", "!"});
  CHECK(chrf_words("\"quoted") == std::vector<std::string>{"\"", "quoted"});
  // Multiple references: the one with the best F is kept.
  Chrf plain;
  auto best = plain.segment_stats("abc", {"xyz", "abc"});
  CHECK(plain.f_score(best) == Approx(100.0));
  ChrfScore s = plain.corpus_score({"abc"}, {{"abc"}});
  CHECK(s.format(2) == "chrF2 = 100.00");
  CHECK(plain.signature() == "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.3.1");
  ChrfOptions pp;
  pp.word_order = 2;
  Chrf chrfpp(pp);
  CHECK(chrfpp.corpus_score({"a b"}, {{"a b"}}).name == "chrF2++");
  CHECK(chrfpp.signature() == "nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:2.3.1");
  CHECK_THROWS_WITH(plain.corpus_score({"a"}, {{""}}), Catch::Contains("empty reference"));
}
