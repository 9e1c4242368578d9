// moe-score sentences (apps/moe-score/sentences_command.h) on a saved tiny causal LM: each line's log-probability
// is its teacher-forced sum from the start of a sentence (after </s>) with its </s>, the lines are independent of
// each other and of the batches, --word-scores gives the tokens' terms, --summary the corpus line alone, and a
// translation model is refused.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "moe-score/score_program.h"
#include "tiny_model.h"
#include "translator/translate_text.h"

using namespace moe;

namespace {
/// The terms of log P(ids + </s>) read after </s>, by teacher forcing (test::lm_log_prob_rows).
std::vector<double> teacher_forced(const test::TinyModel& m, const std::vector<int32_t>& ids) {
  const auto rows = test::lm_log_prob_rows(m, ids);
  std::vector<double> terms;
  for (size_t t = 0; t < rows.size(); ++t) terms.push_back(rows[t][t < ids.size() ? ids[t] : 3]);
  return terms;
}
}  // namespace

TEST_CASE("moe-score sentences scores each line as a sentence of the language model", "[translator][scoring]") {
  const auto lm = test::tiny_lm(7);
  const auto dir = test::temp_dir("sentences");
  const std::string ckpt = test::save_tiny(lm, dir, {"lm"});
  const std::vector<std::string> lines = {"w4 w9 w13", "", "w7 w7 w7 w7 w7 w7", "w1"};
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  test::write_file(dir / "text.txt", text);
  const auto run = [&](std::vector<std::string> extra, std::string& err_text) {
    std::vector<std::string> args = {"moe-score", "sentences", "-m", ckpt, "-i", (dir / "text.txt").string(),
                                     "--device",  "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out, err;
    const int rc = score_table().run(args, out, err);
    err_text = err.str();
    INFO(err_text);
    REQUIRE(rc == 0);
    return out.str();
  };
  std::string err;
  const auto got = test::split_lines(run({"--word-scores", "--max-tokens", "8"}, err));  // several batches
  REQUIRE(got.size() == lines.size());
  double total = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i);
    const auto terms = teacher_forced(lm, lm.vocab->encode(lines[i]));
    double want = 0;
    for (double x : terms) want += x;
    total += want;
    std::istringstream fields(got[i]);
    double log_prob = 0;
    int64_t tokens = 0;
    REQUIRE(fields >> log_prob >> tokens);
    CHECK(log_prob == Approx(want).margin(1e-5));
    CHECK(tokens == static_cast<int64_t>(terms.size()));
    std::vector<float> scores;
    for (float x; fields >> x;) scores.push_back(x);
    REQUIRE(scores.size() == terms.size());
    for (size_t t = 0; t < terms.size(); ++t) CHECK(scores[t] == Approx(terms[t]).margin(1e-4));
  }
  CHECK_THAT(err, Catch::Contains("sentences: 4 lines, 14 tokens, log-prob "));
  // One batch gives the same lines; --summary prints only the corpus line.
  std::string err1;
  const auto whole = test::split_lines(run({}, err1));
  REQUIRE(whole.size() == lines.size());
  for (size_t i = 0; i < lines.size(); ++i) CHECK(std::stod(whole[i]) == Approx(std::stod(got[i])).margin(1e-5));
  std::string err2;
  const std::string summary = run({"--summary"}, err2);
  CHECK(test::split_lines(summary).size() == 1);
  CHECK_THAT(summary, Catch::StartsWith("sentences: 4 lines, 14 tokens, log-prob "));
  CHECK(std::stod(summary.substr(summary.find("log-prob ") + 9)) == Approx(total).margin(1e-3));

  // A translation model is refused.
  std::filesystem::create_directories(dir / "tm");
  const std::string tm = test::save_tiny(test::tiny_model(), dir / "tm");
  std::ostringstream out, err3;
  CHECK(score_table().run({"moe-score", "sentences", "-m", tm, "-i", (dir / "text.txt").string(), "--device", "cpu"},
                          out, err3) != 0);
  CHECK_THAT(err3.str(), Catch::Contains("not a causal language model"));
  std::filesystem::remove_all(dir);
}
