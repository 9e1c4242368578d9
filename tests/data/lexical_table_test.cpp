// Lexical tables (lib/data/lexical_table.h): IBM Model 1 equals a dense EM written out from the formulas (every
// probability, 4 iterations, no pruning), finds the word translations of a toy corpus, prunes, and skips empty
// sides; the lex.s2t file round-trips exactly, and bad lines are errors naming the file and line.
#include "data/lexical_table.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>

#include "common/error.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

namespace {
// ids 4..7 source words a b c d, 8..11 their translations x y z u
const WordVocab kWords({"a", "b", "c", "d", "x", "y", "z", "u"});

std::vector<int32_t> ids(const std::string& text) { return kWords.encode(text); }

struct Corpus {
  std::vector<std::vector<int32_t>> src, tgt;
};

Corpus toy_corpus() {
  Corpus c;
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"a b", "y x"}, {"a c", "x z"},     {"b c d", "u y z"}, {"c d", "z u"}, {"a d", "u x"},
      {"b", "y"},     {"a b c", "z x y"}, {"d a", "x u"},     {"", "x"},      {"a", ""}};
  for (const auto& [s, t] : pairs) {
    c.src.push_back(ids(s));
    c.tgt.push_back(ids(t));
  }
  return c;
}

/// Model 1 over dense tables, straight from the E- and M-step formulas (row 0: NULL); with `diagonal` > 0 each
/// E-step term weighted by fast_align's prior: 0.08 for NULL, 0.92 exp(-diagonal |i/I - j/J|) / Z (1-based i, j).
std::map<std::pair<int32_t, int32_t>, double> dense_model1(const Corpus& c, int iterations, double diagonal = 0) {
  const int32_t v = kWords.size();
  std::vector<std::vector<double>> t(static_cast<size_t>(v) + 1, std::vector<double>(static_cast<size_t>(v), 1.0));
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::vector<double>> count(t.size(), std::vector<double>(static_cast<size_t>(v), 0.0));
    for (size_t s = 0; s < c.src.size(); ++s) {
      const auto &fs = c.src[s], &es = c.tgt[s];
      if (fs.empty() || es.empty()) continue;
      const double I = static_cast<double>(fs.size()), J = static_cast<double>(es.size());
      for (size_t j = 0; j < es.size(); ++j) {
        std::vector<double> w(fs.size() + 1, 1.0);  // the prior of NULL and of each source word
        if (diagonal > 0) {
          double norm = 0;
          for (size_t i = 1; i <= fs.size(); ++i) norm += std::exp(-diagonal * std::abs(i / I - (j + 1) / J));
          w[0] = 0.08;
          for (size_t i = 1; i <= fs.size(); ++i)
            w[i] = 0.92 * std::exp(-diagonal * std::abs(i / I - (j + 1) / J)) / norm;
        }
        const int32_t e = es[j];
        double z = w[0] * t[0][e];
        for (size_t i = 1; i <= fs.size(); ++i) z += w[i] * t[fs[i - 1] + 1][e];
        count[0][e] += w[0] * t[0][e] / z;
        for (size_t i = 1; i <= fs.size(); ++i) count[fs[i - 1] + 1][e] += w[i] * t[fs[i - 1] + 1][e] / z;
      }
    }
    for (size_t f = 0; f < t.size(); ++f) {
      double total = 0;
      for (double x : count[f]) total += x;
      for (int32_t e = 0; e < v; ++e) t[f][e] = total > 0 ? count[f][e] / total : 0.0;
    }
  }
  std::map<std::pair<int32_t, int32_t>, double> out;
  for (int32_t f = 0; f < v; ++f)
    for (int32_t e = 0; e < v; ++e)
      if (t[f + 1][e] > 0) out[{f, e}] = t[f + 1][e];
  return out;
}
}  // namespace

TEST_CASE("lexical table: IBM Model 1 equals the dense EM of its formulas", "[data][lex]") {
  const Corpus c = toy_corpus();
  for (double diagonal : {0.0, 4.0}) {  // Model 1, and fast_align's diagonal model
    INFO("diagonal tension " << diagonal);
    const LexicalTable table = train_lexical_table(c.src, c.tgt, {.iterations = 4, .prune = 0, .diagonal = diagonal});
    const auto reference = dense_model1(c, 4, diagonal);
    REQUIRE(table.entries.size() == reference.size());
    for (const LexicalEntry& e : table.entries) {
      INFO("source " << kWords.piece(e.source) << ", target " << kWords.piece(e.target));
      REQUIRE(reference.count({e.source, e.target}) == 1);
      CHECK(e.prob == Approx(reference.at({e.source, e.target})).epsilon(1e-6));
    }
  }
  const LexicalTable table = train_lexical_table(c.src, c.tgt, {.iterations = 4, .prune = 0});
  // sorted by source, then probability descending
  for (size_t i = 1; i < table.entries.size(); ++i) {
    const LexicalEntry &a = table.entries[i - 1], &b = table.entries[i];
    CHECK((a.source < b.source || (a.source == b.source && a.prob >= b.prob)));
  }
}

TEST_CASE("lexical table: the toy corpus's translations come first; pruning", "[data][lex]") {
  const Corpus c = toy_corpus();
  const LexicalTable table = train_lexical_table(c.src, c.tgt, {.iterations = 10, .prune = 0});
  std::map<int32_t, int32_t> best;  // each source word's most probable target (the first of its entries)
  for (const LexicalEntry& e : table.entries) best.emplace(e.source, e.target);
  CHECK(best.at(ids("a")[0]) == ids("x")[0]);
  CHECK(best.at(ids("b")[0]) == ids("y")[0]);
  CHECK(best.at(ids("c")[0]) == ids("z")[0]);
  CHECK(best.at(ids("d")[0]) == ids("u")[0]);

  const LexicalTable pruned = train_lexical_table(c.src, c.tgt, {.iterations = 10, .prune = 0.2});
  CHECK(pruned.entries.size() < table.entries.size());
  for (const LexicalEntry& e : pruned.entries) CHECK(e.prob >= 0.2f);

  CHECK_THROWS_WITH(train_lexical_table(c.src, {}, {}), Contains("source sentences"));
  CHECK_THROWS_WITH(train_lexical_table(c.src, c.tgt, {.iterations = 0}), Contains("iterations"));
}

TEST_CASE("lexical table: Viterbi word alignments", "[data][lex][alignment]") {
  Corpus c = toy_corpus();
  for (int r = 0; r < 3; ++r) {  // a repeated word: only the diagonal prior tells its two links apart
    c.src.push_back(ids("a a"));
    c.tgt.push_back(ids("x x"));
  }
  std::vector<std::vector<WordLink>> model1, diagonal;
  train_lexical_table(c.src, c.tgt, {.iterations = 10, .prune = 0}, &model1);
  train_lexical_table(c.src, c.tgt, {.iterations = 10, .prune = 0, .diagonal = 4}, &diagonal);
  REQUIRE(model1.size() == c.src.size());
  REQUIRE(diagonal.size() == c.src.size());
  // Model 1 finds the translations whatever their order
  CHECK(model1[0] == std::vector<WordLink>{{1, 0}, {0, 1}});          // "a b" -> "y x"
  CHECK(model1[2] == std::vector<WordLink>{{2, 0}, {0, 1}, {1, 2}});  // "b c d" -> "u y z"
  CHECK(model1[6] == std::vector<WordLink>{{2, 0}, {0, 1}, {1, 2}});  // "a b c" -> "z x y"
  CHECK(model1[10] == std::vector<WordLink>{{0, 0}, {0, 1}});         // ties go to the first source word
  // the diagonal prior prefers monotone links: on ten pairs of mostly crossed words it outweighs the table
  CHECK(diagonal[1] == std::vector<WordLink>{{0, 0}, {1, 1}});  // "a c" -> "x z"
  CHECK(diagonal[3] == std::vector<WordLink>{{0, 0}, {1, 1}});  // "c d" -> "z u"
  CHECK(diagonal[10] == std::vector<WordLink>{{0, 0}, {1, 1}});
  for (const auto* links : {&model1, &diagonal}) {  // an empty side: no links
    CHECK((*links)[8].empty());
    CHECK((*links)[9].empty());
  }
  CHECK_THROWS_WITH(train_lexical_table(c.src, c.tgt, {.diagonal = -1}), Contains("diagonal"));
}

TEST_CASE("lexical table: lex.s2t files round-trip; bad lines name the file and line", "[data][lex]") {
  const Corpus c = toy_corpus();
  const LexicalTable table = train_lexical_table(c.src, c.tgt, {.iterations = 3, .prune = 0});
  std::ostringstream text;
  write_lexical_table(table, kWords, kWords, text);
  CHECK(text.str().find("x a ") != std::string::npos);  // "target source probability"
  const auto dir = test::temp_dir("lex");
  int64_t skipped = -1;
  CHECK(read_lexical_table(test::write_file(dir + "/lex.s2t", text.str()), kWords, kWords, &skipped).entries ==
        table.entries);
  CHECK(skipped == 0);

  // Pieces the vocabularies lack are counted and skipped; blank lines are ignored.
  const LexicalTable few = read_lexical_table(
      test::write_file(dir + "/few.s2t", "y b 0.5\n\nNULL a 0.2\nx a 1\nx zz 0.3\n"), kWords, kWords, &skipped);
  CHECK(skipped == 2);
  REQUIRE(few.entries.size() == 2);
  CHECK(few.entries[0] == LexicalEntry{ids("a")[0], ids("x")[0], 1.f});
  CHECK(few.entries[1] == LexicalEntry{ids("b")[0], ids("y")[0], 0.5f});

  CHECK_THROWS_WITH(read_lexical_table(test::write_file(dir + "/two.s2t", "x a 0.5\nx a\n"), kWords, kWords, nullptr),
                    Contains("two.s2t:2") && Contains("target source probability"));
  CHECK_THROWS_WITH(read_lexical_table(test::write_file(dir + "/four.s2t", "x a 0.5 1\n"), kWords, kWords, nullptr),
                    Contains("four.s2t:1"));
  CHECK_THROWS_WITH(read_lexical_table(test::write_file(dir + "/nan.s2t", "x a high\n"), kWords, kWords, nullptr),
                    Contains("nan.s2t:1") && Contains("'high'"));
  CHECK_THROWS_WITH(read_lexical_table(test::write_file(dir + "/big.s2t", "x a 1.5\n"), kWords, kWords, nullptr),
                    Contains("big.s2t:1") && Contains("[0, 1]"));
  CHECK_THROWS_WITH(read_lexical_table(dir + "/missing.s2t", kWords, kWords, nullptr), Contains("missing.s2t"));
}
