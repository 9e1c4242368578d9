// Forced target prefixes (translator/target_prefix.h, moe-translate --prefix) with a tiny random
// Transformer: every n-best hypothesis (beam 5) and the greedy output begin with the prefix, their
// log-probs equal forced scoring of the whole output (the prefix tokens are scored), an empty prefix
// equals no prefix, a prefix longer than the length limit is still emitted, and the errors (special
// ids, counts, --prefix files with fewer or more lines than the input) name what is wrong.
#include <catch2/catch.hpp>
#include <sstream>

#include "moe-translate/translate_cli.h"
#include "tiny_model.h"
#include "translator/pair_scores.h"
#include "translator/translate_text.h"
#include "translator/translator.h"

using namespace moe;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18}, {6, 6, 6}, {10, 11}};
const TargetPrefixes kPrefixes = {{8, 9}, {}, {21}, {5, 5, 5}, {17, 4, 12, 19}};

bool starts_with(const std::vector<int32_t>& tokens, const std::vector<int32_t>& prefix) {
  return tokens.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}
}  // namespace

TEST_CASE("every hypothesis begins with its forced prefix and is scored as forced decoding", "[translator][prefix]") {
  const auto m = test::tiny_model(13, 32, 4.f);
  for (int beam : {1, 5}) {
    TranslatorOptions o;
    o.search.beam = beam;
    o.search.n_best = beam;
    o.search.max_len_b = 3;  // shorter than the longest prefix: the prefix is still emitted whole
    const Translator tr(m.net(), *m.params, Device::cpu(), o);
    const auto got = tr.translate(kSources, {}, kPrefixes);
    const auto free = tr.translate(kSources);
    std::vector<std::vector<int32_t>> src, tgt;
    std::vector<double> log_probs;
    for (size_t s = 0; s < kSources.size(); ++s) {
      REQUIRE(!got[s].empty());
      // A prefix that reaches the length limit leaves one hypothesis: the prefix and </s>.
      CHECK(static_cast<int>(got[s].size()) == (kPrefixes[s].size() < 3 ? beam : 1));
      for (const Hypothesis& h : got[s]) {
        CHECK(starts_with(h.tokens, kPrefixes[s]));
        src.push_back(kSources[s]);
        tgt.push_back(h.tokens);
        log_probs.push_back(h.log_prob);
      }
      if (kPrefixes[s].empty()) {  // an empty prefix equals no prefix
        REQUIRE(free[s].size() == got[s].size());
        for (size_t h = 0; h < got[s].size(); ++h) {
          CHECK(got[s][h].tokens == free[s][h].tokens);
          // to the last bits only where the batches run the same GEMM and attention shapes: the other sentences'
          // prefixes change which rows are decoded (a sentence decoded alone differs from the batch in its last
          // bits too)
          CHECK(got[s][h].log_prob == Approx(free[s][h].log_prob).epsilon(1e-6));
        }
      }
    }
    const auto forced = score_pairs(*m.model, *m.params, Device::cpu(), src, tgt, PairScoreOptions{});
    for (size_t i = 0; i < forced.size(); ++i) CHECK(forced[i].log_prob == Approx(log_probs[i]).epsilon(1e-4));
  }
  // The prefix changes the output where the model would not start with it.
  TranslatorOptions o;
  const Translator tr(m.net(), *m.params, Device::cpu(), o);
  const auto free = tr.translate(kSources);
  bool changed = false;
  for (size_t s = 0; s < kSources.size(); ++s) changed |= !starts_with(free[s][0].tokens, kPrefixes[s]);
  CHECK(changed);
  // All-empty prefixes equal none.
  const auto empty = tr.translate(kSources, {}, TargetPrefixes(kSources.size()));
  for (size_t s = 0; s < kSources.size(); ++s) CHECK(empty[s][0].tokens == free[s][0].tokens);
}

TEST_CASE("target prefix errors", "[translator][prefix]") {
  const auto m = test::tiny_model();
  const Translator tr(m.net(), *m.params, Device::cpu(), TranslatorOptions{});
  CHECK_THROWS_WITH(tr.translate(kSources, {}, TargetPrefixes(2)), Catch::Contains("2 target prefixes for 5 sources"));
  TargetPrefixes eos(kSources.size());
  eos[1] = {3};
  CHECK_THROWS_WITH(tr.translate(kSources, {}, eos), Catch::Contains("token id 3") && Catch::Contains("</s>"));
  eos[1] = {99};
  CHECK_THROWS_WITH(tr.translate(kSources, {}, eos), Catch::Contains("token id 99") && Catch::Contains("vocabulary"));
  eos[1] = std::vector<int32_t>(40, 5);
  CHECK_THROWS_WITH(tr.translate(kSources, {}, eos), Catch::Contains("40 tokens"));
}

TEST_CASE("moe-translate --prefix", "[translator][prefix][cli]") {
  const auto m = test::tiny_model(13, 16, 4.f);
  const auto dir = test::temp_dir("prefix");
  TranslateCliOptions o;
  o.models = {test::save_tiny(m, dir)};
  o.decoding.device = Device::cpu();
  o.quiet = true;
  o.decoding.search.n_best = 3;
  o.decoding.search.beam = 3;
  o.chunk_lines = 2;  // prefixes read in step with several chunks
  const std::vector<std::string> prefixes = {"w5 w6", "", "w17", "w1 w1 w1", ""};
  std::string input = "w1 w2 w3\nw4\nw9 w8 w7 w6\n\nw11 w12\n", pre;
  for (const auto& p : prefixes) pre += p + "\n";
  test::write_file(dir / "prefix.txt", pre);
  test::write_file(dir / "in.txt", input);
  o.prefix = (dir / "prefix.txt").string();
  std::istringstream in(input);
  std::ostringstream out, err;
  run_translate(o, in, out, err);
  std::istringstream lines(out.str());
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  REQUIRE(got.size() == 3 * prefixes.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string text = got[i].substr(got[i].rfind('\t') + 1);
    if (i / 3 != 3) CHECK(text.rfind(prefixes[i / 3], 0) == 0);  // line 4 is empty: not translated
  }
  // An empty prefix file line gives what no --prefix gives.
  TranslateCliOptions plain = o;
  plain.prefix.clear();
  std::istringstream in2(input);
  std::ostringstream out2;
  run_translate(plain, in2, out2, err);
  std::istringstream lines2(out2.str());
  std::vector<std::string> free;
  for (std::string l; std::getline(lines2, l);) free.push_back(l);
  REQUIRE(free.size() == got.size());
  for (size_t i = 3; i < 6; ++i) CHECK(free[i] == got[i]);

  // Line counts: a file input fails before translating, stdin as soon as the files part.
  test::write_file(dir / "short.txt", "w5\nw6\n");
  o.prefix = (dir / "short.txt").string();
  o.input = (dir / "in.txt").string();
  CHECK_THROWS_WITH(run_translate(o, in, out, err),
                    Catch::Contains("short.txt' has 2 lines but the input") && Catch::Contains("in.txt' has 5"));
  o.input = "-";
  std::istringstream in3(input);
  CHECK_THROWS_WITH(run_translate(o, in3, out, err),
                    Catch::Contains("short.txt' has 2 lines but the input has at least"));
  test::write_file(dir / "long.txt", pre + "w1\n");
  o.prefix = (dir / "long.txt").string();
  std::istringstream in4(input);
  CHECK_THROWS_WITH(run_translate(o, in4, out, err), Catch::Contains("long.txt' has more lines than the input's 5"));
  o.prefix = (dir / "missing.txt").string();
  CHECK_THROWS_WITH(run_translate(o, in4, out, err),
                    Catch::Contains("cannot open --prefix") && Catch::Contains("missing.txt"));
  std::filesystem::remove_all(dir);
}
